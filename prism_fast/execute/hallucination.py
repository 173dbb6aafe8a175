"""Static API-hallucination checker (ours; spec execution.md §9).

A deterministic AST pass over a cleaned script that resolves the names and attributes it uses against the frozen
Manim CE 0.19.0 namespace (:mod:`prism_fast.execute.manim_namespace`) and the frozen star-import names of a fixed
list of other modules (:mod:`prism_fast.execute.star_index`). It runs identically in both profiles and never imports
manim, executes the script, or imports, finds or executes any module the script names: scripts are adversarial and
the checker runs in trusted processes (the render actor), so it works from those two data files only.

Findings (§9.3), each distinct (kind, identifier) once:
  ``import``          ``from manim[.sub] import X`` with no X there, or ``import manim.x.y`` with no such module;
  ``name``            an unresolved Load-context name that is capitalised or called;
  ``module_attr``     ``M.X`` with M a manim (sub)module and no X in it;
  ``class_attr``      ``C.X`` with C a manim class and X not in dir(C);
  ``instance_attr``   ``v.X`` / ``v.animate.X`` / ``C().X`` / ``self.X`` on a typed receiver (rules in §9.3).

Keyword arguments are not findings (§9.3: an invalid keyword is misuse). They are checked against the ``__init__``
chain (following ``**kwargs`` pass-through along the MRO) and reported separately as ``keyword_findings``, for
diagnosis only; they never enter ``hallucination_static_count``.

Our additions to the letter of §9.3, all to avoid false findings on valid scripts (each a documented widening):
  * instance attributes include attributes that manim's own methods assign on ``self`` (``mob.points``,
    ``text.text``, ``scene.mobjects``), harvested from the manim source at namespace build time;
  * class attributes include ``dir(type)`` (``Circle.__name__``); module attributes include those every module
    object has (``rate_functions.__dict__``);
  * Mobject's ``__getattr__`` compatibility layer: ``set_<x>`` always exists and ``get_<x>`` exists when ``x``
    does; classes with any other ``__getattr__`` are not checked;
  * ``self.X`` also accepts the names defined in the class bodies of the in-file class chain (its methods).

Two passes: :mod:`prism_fast.execute.hallucination_bindings` collects what the script binds (scopes, imports,
star imports; ``import`` findings), this module checks every use against it (names, attributes, keywords).
"""

from __future__ import annotations

import ast
import builtins
import logging
import re
import types
from dataclasses import dataclass, field

from prism_fast.execute.hallucination_bindings import BindingCollector, Finding, Scope, is_manim_module, target_names
from prism_fast.execute.manim_namespace import MOBJECT_KEY, SCENE_KEY, Namespace, load_namespace

# 2: star imports from non-manim modules are resolved from the frozen star index, never by importing.
CHECKER_VERSION = "2"

log = logging.getLogger(__name__)

_MODULE_DUNDERS = frozenset({"__file__", "__name__", "__doc__", "__builtins__", "__spec__", "__loader__",
                             "__package__", "__annotations__", "__path__", "__cached__"})
_CLASS_BODY_DUNDERS = frozenset({"__qualname__", "__module__", "__class__"})
_BUILTIN_NAMES = frozenset(dir(builtins)) | _MODULE_DUNDERS | _CLASS_BODY_DUNDERS
# Attributes every module object has without listing them in dir(module) (e.g. `rate_functions.__dict__`).
_MODULE_OBJECT_ATTRS = frozenset(dir(types.ModuleType("m"))) | {"__dict__", "__class__"}

@dataclass
class HallucinationReport:
    parsed: bool
    findings: list[Finding] = field(default_factory=list)
    unresolved_names: list[str] = field(default_factory=list)
    keyword_findings: list[Finding] = field(default_factory=list)
    name_findings_enabled: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def static_count(self) -> int:
        return len(self.findings)

    def to_row(self) -> dict:
        """The per-row fields of §9.4 (plus our diagnosis-only extras)."""
        return {
            "hallucination_static_count": self.static_count,
            "hallucination_findings": [f.to_dict() for f in self.findings],
            "unresolved_names": list(self.unresolved_names),
            "hallucination_keyword_findings": [f.to_dict() for f in self.keyword_findings],
            "hallucination_name_findings_enabled": self.name_findings_enabled,
            "hallucination_notes": list(self.notes),
            "hallucination_checker_version": CHECKER_VERSION,
        }


def corroborated_count(findings: list[Finding] | list[dict], runtime_error_text: str) -> int:
    """``hallucination_count`` for the classifier (§9.4).

    Findings whose identifier appears as a whole word (quoted or not) in the lower-cased runtime error text. With
    no runtime error text, every static finding counts.
    """
    text = (runtime_error_text or "").strip().lower()
    idents = [f.identifier if isinstance(f, Finding) else f["identifier"] for f in findings]
    if not text:
        return len(idents)
    return sum(1 for ident in idents
               if re.search(r"(?<!\w)" + re.escape(ident.lower()) + r"(?!\w)", text))


# Work bound of the ``self.X`` check (names gathered from in-file class chains, summed over the classes whose
# ``self`` is read): a chain of thousands of classes, each reading ``self``, would otherwise cost the square of its
# length. Past it, the remaining classes' ``self`` is not checked (no finding, a note: ANALYSIS_BUDGET_NOTE);
# counted in names and classes, never in time, so the report is the same on any machine. The bundled samples
# and fixtures use under a thousandth of it.
SELF_CHAIN_BUDGET = 200_000
ANALYSIS_BUDGET_NOTE = "self-attribute checks stopped: analysis_budget (in-file class chains too large)"


class _Checker(BindingCollector):
    """Pass 2: every Load of a name or attribute, and every keyword of a call, against what pass 1 bound
    (:class:`~prism_fast.execute.hallucination_bindings.BindingCollector`) and the frozen namespace."""

    # ----------------------------------------------------------------------------------------------- pass 2
    def check(self) -> None:
        # pass 1 is complete: what an expression denotes, and what a class chain allows on `self`, no longer
        # change, so each is computed once (per attribute chain, per class)
        self._kinds: dict[int, str | None] = {}
        self._allowed: dict[int, tuple | None] = {}
        self._own: dict[int, tuple | None] = {}
        self._chain_budget = SELF_CHAIN_BUDGET
        self._visit(self.tree, self.module_scope())

    def static_kind(self, node: ast.AST) -> str | None:
        kinds = getattr(self, "_kinds", None)
        if kinds is None:  # (pass 1: bindings are still being collected)
            return super().static_kind(node)
        key = id(node)
        if key not in kinds:  # memoised: `a.b.c.d` is asked at each of its attributes (else quadratic in its length)
            kinds[key] = super().static_kind(node)
        return kinds[key]

    def _visit(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            inner = self.scopes.get(id(child), scope)
            self._check_node(child, inner)
            self._visit(child, inner)

    def _check_node(self, node: ast.AST, scope: Scope) -> None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            self._check_name(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self._check_attribute(node, scope)
        elif isinstance(node, ast.Call):
            self._check_keywords(node)

    def _resolved(self, name: str) -> bool:
        return (name in _BUILTIN_NAMES or name in self.file_bound or name in self.star_kinds
                or name in self.other_star_names)

    def _check_name(self, node: ast.Name) -> None:
        if self._resolved(node.id):
            return
        parent = self.parents.get(id(node))
        is_callee = isinstance(parent, ast.Call) and parent.func is node
        if self.name_findings_enabled and (node.id[:1].isupper() or is_callee):
            self.add("name", node.id, node.lineno)
        else:
            self.unresolved.add(node.id)

    def _check_attribute(self, node: ast.Attribute, scope: Scope) -> None:
        base = self.static_kind(node.value)
        if base and base.startswith("module:"):
            module = base[len("module:"):]
            if (is_manim_module(module) and node.attr not in _MODULE_OBJECT_ATTRS
                    and self.module_member_kind(module, node.attr) is None):
                self.add("module_attr", node.attr, node.lineno)
            return
        if base and base.startswith("class:"):
            key = base[len("class:"):]
            if (self.ns.has_class(key) and node.attr not in self.ns.class_dir(key)
                    and node.attr not in self.ns.data["type_attrs"]):
                self.add("class_attr", node.attr, node.lineno)
            return
        receiver = node.value
        # v.animate.X / v.animate(...).X: the builder forwards X to the mobject.
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
                and receiver.func.attr == "animate":
            receiver = receiver.func.value
        elif isinstance(receiver, ast.Attribute) and receiver.attr == "animate":
            receiver = receiver.value
        elif isinstance(receiver, ast.Attribute):
            return  # no return-type inference for chains
        typed = self._instance_type(receiver, scope)
        if typed is None:
            return
        kind, payload = typed
        if kind == "class":
            key, name = payload
            if name is not None and ((name, node.attr) in self.attr_stores or name in self.setattr_targets):
                return
            if not self._instance_has(key, node.attr):
                self.add("instance_attr", node.attr, node.lineno)
        elif kind == "self":
            classdef, name = payload
            allowed = self._self_allowed(classdef, name)
            if allowed is None:
                return
            manim_keys, names = allowed
            if node.attr in names or any(self._instance_has(k, node.attr) for k in manim_keys):
                return
            self.add("instance_attr", node.attr, node.lineno)

    def _instance_type(self, receiver: ast.AST, scope: Scope):
        if isinstance(receiver, ast.Call):
            kind = self.static_kind(receiver.func)
            if kind and kind.startswith("class:") and self.ns.has_class(kind[6:]):
                return ("class", (kind[6:], None))
            return None
        if not isinstance(receiver, ast.Name):
            return None
        bindings = self.lookup(scope, receiver.id)
        if not bindings:
            return None
        # Typed only if every binding in the scope is a direct call of the same manim class (or the method's
        # `self` parameter).
        resolved = set()
        for how, obj in bindings:
            if how == "call":
                kind = self.static_kind(obj)
                if not kind or not kind.startswith("class:") or not self.ns.has_class(kind[6:]):
                    return None
                resolved.add(("class", kind[6:]))
            elif how == "self":
                resolved.add(("self", obj))
            else:
                return None
        if len(resolved) != 1:
            return None
        how, obj = resolved.pop()
        return ("class", (obj, receiver.id)) if how == "class" else ("self", (obj, receiver.id))

    def _instance_has(self, key: str, attr: str) -> bool:
        if self.ns.has_dynamic_getattr(key) or attr in self.ns.instance_attrs(key):
            return True
        if self.ns.is_subclass(key, MOBJECT_KEY):
            # Mobject.__getattr__: set_<x> always works, get_<x> works when <x> does.
            if attr.startswith("set_"):
                return True
            if attr.startswith("get_"):
                return self._instance_has(key, attr[4:])
        return False

    def _self_allowed(self, classdef: ast.ClassDef, self_name: str):
        """(manim base keys, names defined by the in-file class chain) or None when not checkable."""
        key = id(classdef)
        if key not in self._allowed:  # (the same for every `self.X` of the class: computed once)
            self._allowed[key] = self._chain_allowed(classdef)
        return self._allowed[key]

    def _own_allowed(self, cdef: ast.ClassDef):
        """One class's part of :meth:`_self_allowed`: (names it defines, its manim base keys, its in-file bases), or
        None when not checkable (``setattr``, a base we cannot see into). Computed once per class."""
        key = id(cdef)
        if key in self._own:
            return self._own[key]
        names: set[str] = set()
        manim_keys: list[str] = []
        local: list[ast.ClassDef] = []
        out = None
        for stmt in ast.walk(cdef):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt is not cdef:
                names.add(stmt.name)
            elif isinstance(stmt, ast.Attribute) and isinstance(stmt.ctx, ast.Store) \
                    and isinstance(stmt.value, ast.Name):
                names.add(stmt.attr)
            elif isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Name) and stmt.func.id == "setattr":
                break  # dynamic attributes: not checkable
        else:
            for stmt in cdef.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                        names.update(target_names(target))
            out = (names, manim_keys, local)
            for base in cdef.bases:
                kind = self.static_kind(base)
                if kind and kind.startswith("class:") and self.ns.has_class(kind[6:]):
                    manim_keys.append(kind[6:])
                elif isinstance(base, ast.Name) and base.id in self.classdefs \
                        and self.binding_sites.get(base.id) == 1:
                    local.append(self.classdefs[base.id])
                else:
                    out = None  # a base we cannot see into
                    break
        self._own[key] = out
        return out

    def _chain_allowed(self, classdef: ast.ClassDef):
        manim_keys: list[str] = []
        names: set[str] = set()
        seen: set[int] = set()
        todo = [classdef]
        while todo:
            cdef = todo.pop()
            if id(cdef) in seen:
                continue
            seen.add(id(cdef))
            own = self._own_allowed(cdef)
            if own is None:
                return None
            self._chain_budget -= 1 + len(own[0])
            if self._chain_budget < 0:
                if ANALYSIS_BUDGET_NOTE not in self.notes:
                    self.notes.append(ANALYSIS_BUDGET_NOTE)
                return None
            names |= own[0]
            manim_keys.extend(own[1])
            todo.extend(own[2])
        if not any(self.ns.is_subclass(k, SCENE_KEY) or self.ns.is_subclass(k, MOBJECT_KEY) for k in manim_keys):
            return None
        return manim_keys, names

    def _check_keywords(self, node: ast.Call) -> None:
        kind = self.static_kind(node.func)
        if not kind or not kind.startswith("class:") or not self.ns.has_class(kind[6:]):
            return
        accepted = self.ns.init_keywords(kind[6:])
        if accepted is None:
            return
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in accepted:
                ident = f"{kind[6:].rsplit('.', 1)[-1]}.{kw.arg}"
                self.keyword_findings.setdefault(("keyword", ident), Finding("keyword", ident, kw.value.lineno))


def check_code(code: str, namespace: Namespace | None = None) -> HallucinationReport:
    """Run the checker on one cleaned script. A script that does not parse gives an empty report (§9.2).

    Scripts are adversarial, so the checker must return for any input: a nesting too deep for the parser (e.g.
    ``x = 1+1+...`` with thousands of terms) is "not parsed", and one the parser accepts but this recursive
    visitor cannot walk gives an empty report with name findings off and a note, never an exception in the
    trusted caller."""
    try:
        tree = ast.parse(code or "")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return HallucinationReport(parsed=False, notes=[f"not parsed: {type(exc).__name__}"])
    checker = _Checker(tree, namespace or load_namespace())
    try:
        checker.collect()
        checker.check()
    except RecursionError:
        why = "nesting too deep for the checker (RecursionError)"
        log.warning("hallucination checker: script not checked: %s", why)
        return HallucinationReport(parsed=True, name_findings_enabled=False, notes=[f"not checked: {why}"])
    findings = sorted(checker.findings.values(), key=lambda f: (f.line, f.kind, f.identifier))
    keyword = sorted(checker.keyword_findings.values(), key=lambda f: (f.line, f.identifier))
    return HallucinationReport(parsed=True, findings=findings, unresolved_names=sorted(checker.unresolved),
                               keyword_findings=keyword, name_findings_enabled=checker.name_findings_enabled,
                               notes=checker.notes)


__all__ = ["CHECKER_VERSION", "Finding", "HallucinationReport", "check_code", "corroborated_count"]
