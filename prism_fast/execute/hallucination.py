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
"""

from __future__ import annotations

import ast
import builtins
import logging
import re
import types
from dataclasses import dataclass, field

from prism_fast.execute.manim_namespace import MOBJECT_KEY, SCENE_KEY, Namespace, load_namespace
from prism_fast.execute.star_index import star_names

# 2: star imports from non-manim modules are resolved from the frozen star index, never by importing.
CHECKER_VERSION = "2"

log = logging.getLogger(__name__)

_MODULE_DUNDERS = frozenset({"__file__", "__name__", "__doc__", "__builtins__", "__spec__", "__loader__",
                             "__package__", "__annotations__", "__path__", "__cached__"})
_CLASS_BODY_DUNDERS = frozenset({"__qualname__", "__module__", "__class__"})
_BUILTIN_NAMES = frozenset(dir(builtins)) | _MODULE_DUNDERS | _CLASS_BODY_DUNDERS
# Attributes every module object has without listing them in dir(module) (e.g. `rate_functions.__dict__`).
_MODULE_OBJECT_ATTRS = frozenset(dir(types.ModuleType("m"))) | {"__dict__", "__class__"}


@dataclass(frozen=True)
class Finding:
    kind: str
    identifier: str
    line: int

    def to_dict(self) -> dict:
        return {"kind": self.kind, "identifier": self.identifier, "line": self.line}


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


# --------------------------------------------------------------------------------------------------------------
# Scopes and bindings
# --------------------------------------------------------------------------------------------------------------

@dataclass
class _Scope:
    node: ast.AST
    parent: "_Scope | None"
    # name -> list of binding descriptions: ("call", class_key) | ("self", ClassDef) | ("other", None)
    bindings: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    globals_: set[str] = field(default_factory=set)

    def bind(self, name: str, how: tuple[str, object]) -> None:
        self.bindings.setdefault(name, []).append(how)


def _is_manim_module(dotted: str) -> bool:
    return dotted == "manim" or dotted.startswith("manim.")


def _target_names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


class _Checker:
    def __init__(self, tree: ast.Module, ns: Namespace):
        self.tree = tree
        self.ns = ns
        self.findings: dict[tuple[str, str], Finding] = {}
        self.keyword_findings: dict[tuple[str, str], Finding] = {}
        self.unresolved: set[str] = set()
        self.notes: list[str] = []
        self.name_findings_enabled = True
        self.file_bound: set[str] = set()
        self.binding_sites: dict[str, int] = {}      # name -> number of binding sites of any kind
        self.import_kinds: dict[str, set[str]] = {}  # name -> kinds bound by imports ("" = not manim)
        self.import_sites: dict[str, int] = {}        # name -> number of import statements binding it
        self.star_kinds: dict[str, str] = {}          # names bound by manim star imports -> kind
        self.other_star_names: set[str] = set()
        self.attr_stores: set[tuple[str, str]] = set()  # (receiver name, attr) assigned somewhere
        self.setattr_targets: set[str] = set()
        self.scopes: dict[int, _Scope] = {}
        self.parents: dict[int, ast.AST] = {}
        self.classdefs: dict[str, ast.ClassDef] = {}

    # ----------------------------------------------------------------------------------------------- helpers
    def _add(self, kind: str, ident: str, line: int) -> None:
        self.findings.setdefault((kind, ident), Finding(kind, ident, line))

    def _module_exists(self, dotted: str) -> bool:
        return self.ns.has_module(dotted) or dotted in self.ns.data["import_failures"]

    def _first_missing_module(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if not self._module_exists(prefix):
                return prefix
        return None

    def _module_member_kind(self, module: str, attr: str) -> str | None:
        """Kind of ``module.attr``; None if it does not exist. Unknown-content modules accept anything."""
        if not self.ns.has_module(module):
            return ""  # exists but could not be introspected
        names = self.ns.module_names(module)
        if attr in names:
            return names[attr]
        if self._module_exists(f"{module}.{attr}"):
            return f"module:{module}.{attr}"
        return None

    # ----------------------------------------------------------------------------------------------- pass 1
    def collect(self) -> None:
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        module_scope = _Scope(self.tree, None)
        self.scopes[id(self.tree)] = module_scope
        self._collect_scope(self.tree, module_scope)

    def _note_binding(self, name: str) -> None:
        self.file_bound.add(name)
        self.binding_sites[name] = self.binding_sites.get(name, 0) + 1

    def _collect_scope(self, node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self._collect_node(child, scope)

    def _collect_node(self, node: ast.AST, scope: _Scope) -> None:  # noqa: C901 - one dispatch over node kinds
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._note_binding(node.name)
            scope.bind(node.name, ("other", None))
            for deco in node.decorator_list:
                self._collect_node(deco, scope)
            if isinstance(node, ast.ClassDef):
                self.classdefs.setdefault(node.name, node)
                for base in node.bases + [k.value for k in node.keywords]:
                    self._collect_node(base, scope)
                inner = _Scope(node, scope)
                self.scopes[id(node)] = inner
                for stmt in node.body:
                    self._collect_node(stmt, inner)
                return
            self._collect_arguments_defaults(node.args, scope)
            if node.returns is not None:
                self._collect_node(node.returns, scope)
            inner = _Scope(node, scope)
            self.scopes[id(node)] = inner
            self._bind_arguments(node, inner, scope)
            for stmt in node.body:
                self._collect_node(stmt, inner)
            return
        if isinstance(node, ast.Lambda):
            self._collect_arguments_defaults(node.args, scope)
            inner = _Scope(node, scope)
            self.scopes[id(node)] = inner
            self._bind_arguments(node, inner, scope)
            self._collect_node(node.body, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # The first iterable is evaluated in the enclosing scope; everything else in the comprehension's.
            inner = _Scope(node, scope)
            self.scopes[id(node)] = inner
            for i, gen in enumerate(node.generators):
                self._collect_node(gen.iter, scope if i == 0 else inner)
                self._collect_node(gen.target, inner)
                for cond in gen.ifs:
                    self._collect_node(cond, inner)
            for part in ("elt", "key", "value"):
                if hasattr(node, part):
                    self._collect_node(getattr(node, part), inner)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self._collect_import(node, scope)
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                self._note_binding(name)
                scope.globals_.add(name)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            # `v = C(...)`: the callee is resolved in pass 2, once every import and binding is known.
            how = ("call", value.func) if isinstance(value, ast.Call) else ("other", None)
            for target in targets:
                if isinstance(target, ast.Name):
                    self._note_binding(target.id)
                    scope.bind(target.id, how)
                else:  # tuple/list unpacking, attributes, subscripts
                    self._collect_node(target, scope)
            if value is not None:
                self._collect_node(value, scope)
            if isinstance(node, ast.AnnAssign):
                self._collect_node(node.annotation, scope)
            return
        if isinstance(node, ast.ExceptHandler) and node.name:
            self._note_binding(node.name)
            scope.bind(node.name, ("other", None))
        if isinstance(node, ast.MatchAs) and node.name:
            self._note_binding(node.name)
            scope.bind(node.name, ("other", None))
        if isinstance(node, ast.MatchStar) and node.name:
            self._note_binding(node.name)
            scope.bind(node.name, ("other", None))
        if isinstance(node, ast.MatchMapping) and node.rest:
            self._note_binding(node.rest)
            scope.bind(node.rest, ("other", None))
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self._note_binding(node.id)
            scope.bind(node.id, ("other", None))
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            self.attr_stores.add((node.value.id, node.attr))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and node.args and isinstance(node.args[0], ast.Name)):
            self.setattr_targets.add(node.args[0].id)
        self._collect_scope(node, scope)

    def _collect_arguments_defaults(self, args: ast.arguments, scope: _Scope) -> None:
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self._collect_node(default, scope)
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self._collect_node(arg.annotation, scope)

    def _bind_arguments(self, func: ast.AST, inner: _Scope, outer: _Scope) -> None:
        args = func.args
        positional = args.posonlyargs + args.args
        is_method = isinstance(outer.node, ast.ClassDef) and not isinstance(func, ast.Lambda)
        decorators = {d.id for d in getattr(func, "decorator_list", []) if isinstance(d, ast.Name)}
        for i, arg in enumerate(positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]):
            self._note_binding(arg.arg)
            if i == 0 and is_method and arg in positional and not decorators & {"staticmethod", "classmethod"}:
                inner.bind(arg.arg, ("self", outer.node))
            else:
                inner.bind(arg.arg, ("other", None))

    def _collect_import(self, node: ast.AST, scope: _Scope) -> None:
        line = node.lineno
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                self._note_binding(bound)
                self.import_sites[bound] = self.import_sites.get(bound, 0) + 1
                scope.bind(bound, ("other", None))
                top = alias.name.split(".")[0]
                if top != "manim":
                    self.import_kinds.setdefault(bound, set()).add("")
                    continue
                missing = self._first_missing_module(alias.name)
                if missing:
                    self._add("import", missing, line)
                    self.import_kinds.setdefault(bound, set()).add("")
                else:
                    target = alias.name if alias.asname else "manim"
                    self.import_kinds.setdefault(bound, set()).add(f"module:{target}")
            return
        module = node.module or ""
        is_manim = node.level == 0 and _is_manim_module(module)
        missing = self._first_missing_module(module) if is_manim else None
        if missing:
            self._add("import", missing, line)
        for alias in node.names:
            if alias.name == "*":
                if is_manim and not missing:
                    if self.ns.has_module(module):
                        for name in self.ns.module_star(module):
                            self.star_kinds[name] = self.ns.module_names(module).get(name, "")
                    else:
                        self._disable_names(f"star import from un-introspectable manim module {module}")
                elif not is_manim:
                    self._star_from_other(module, node.level)
                continue
            bound = alias.asname or alias.name
            self._note_binding(bound)
            self.import_sites[bound] = self.import_sites.get(bound, 0) + 1
            scope.bind(bound, ("other", None))
            if not is_manim or missing:
                self.import_kinds.setdefault(bound, set()).add("")
                continue
            kind = self._module_member_kind(module, alias.name)
            if kind is None:
                self._add("import", alias.name, line)
                kind = ""
            self.import_kinds.setdefault(bound, set()).add(kind)

    def _disable_names(self, why: str) -> None:
        self.name_findings_enabled = False
        self.notes.append(f"unresolved-name findings disabled: {why}")
        log.warning("hallucination checker: unresolved-name findings disabled for this script: %s", why)

    def _star_from_other(self, module: str, level: int) -> None:
        """A star import from a non-manim module binds the names frozen for it in the star index.

        The module is never imported: a script names it, and a module name chosen by an adversarial script
        (``unittest.__main__``, ``antigravity``, a file it managed to place on ``sys.path``) must not run in the
        trusted scoring process. A module the index does not know is unknown: name findings are switched off."""
        names = None if level or not module else star_names(module)
        if names is None:
            self._disable_names(f"star import from {'.' * level}{module} is not in the frozen star index")
            return
        self.other_star_names.update(names)
        self.notes.append(f"star import from {module} resolved from the frozen star index")

    # ----------------------------------------------------------------------------------------------- resolution
    def _static_kind(self, node: ast.AST) -> str | None:
        """Kind of a Name/Attribute expression that statically denotes a manim module or class, else None."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.import_kinds:
                kinds = self.import_kinds[name]
                # Meaningful only if every binding site of the name is such an import with the same kind.
                if len(kinds) == 1 and self.binding_sites.get(name, 0) == self.import_sites.get(name, 0):
                    return next(iter(kinds)) or None
                return None
            if name in self.star_kinds and name not in self.file_bound:
                return self.star_kinds[name] or None
            return None
        if isinstance(node, ast.Attribute):
            base = self._static_kind(node.value)
            if base and base.startswith("module:"):
                module = base[len("module:"):]
                if not _is_manim_module(module):
                    return None
                return self._module_member_kind(module, node.attr) or None
        return None

    def _lookup(self, scope: _Scope, name: str) -> list[tuple[str, object]] | None:
        """Bindings of ``name`` in the scope that a Load in ``scope`` refers to (None if unbound)."""
        current: _Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals_:
                current = self._module_scope()
                return current.bindings.get(name)
            if (first or not isinstance(current.node, ast.ClassDef)) and name in current.bindings:
                return current.bindings[name]
            first = False
            current = current.parent
        return None

    def _module_scope(self) -> _Scope:
        return self.scopes[id(self.tree)]

    # ----------------------------------------------------------------------------------------------- pass 2
    def check(self) -> None:
        self._visit(self.tree, self._module_scope())

    def _visit(self, node: ast.AST, scope: _Scope) -> None:
        for child in ast.iter_child_nodes(node):
            inner = self.scopes.get(id(child), scope)
            self._check_node(child, inner)
            self._visit(child, inner)

    def _check_node(self, node: ast.AST, scope: _Scope) -> None:
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
            self._add("name", node.id, node.lineno)
        else:
            self.unresolved.add(node.id)

    def _check_attribute(self, node: ast.Attribute, scope: _Scope) -> None:
        base = self._static_kind(node.value)
        if base and base.startswith("module:"):
            module = base[len("module:"):]
            if (_is_manim_module(module) and node.attr not in _MODULE_OBJECT_ATTRS
                    and self._module_member_kind(module, node.attr) is None):
                self._add("module_attr", node.attr, node.lineno)
            return
        if base and base.startswith("class:"):
            key = base[len("class:"):]
            if (self.ns.has_class(key) and node.attr not in self.ns.class_dir(key)
                    and node.attr not in self.ns.data["type_attrs"]):
                self._add("class_attr", node.attr, node.lineno)
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
                self._add("instance_attr", node.attr, node.lineno)
        elif kind == "self":
            classdef, name = payload
            allowed = self._self_allowed(classdef, name)
            if allowed is None:
                return
            manim_keys, names = allowed
            if node.attr in names or any(self._instance_has(k, node.attr) for k in manim_keys):
                return
            self._add("instance_attr", node.attr, node.lineno)

    def _instance_type(self, receiver: ast.AST, scope: _Scope):
        if isinstance(receiver, ast.Call):
            kind = self._static_kind(receiver.func)
            if kind and kind.startswith("class:") and self.ns.has_class(kind[6:]):
                return ("class", (kind[6:], None))
            return None
        if not isinstance(receiver, ast.Name):
            return None
        bindings = self._lookup(scope, receiver.id)
        if not bindings:
            return None
        # Typed only if every binding in the scope is a direct call of the same manim class (or the method's
        # `self` parameter).
        resolved = set()
        for how, obj in bindings:
            if how == "call":
                kind = self._static_kind(obj)
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
        manim_keys: list[str] = []
        names: set[str] = set()
        seen: set[int] = set()
        todo = [classdef]
        while todo:
            cdef = todo.pop()
            if id(cdef) in seen:
                continue
            seen.add(id(cdef))
            for stmt in ast.walk(cdef):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt is not cdef:
                    names.add(stmt.name)
                elif isinstance(stmt, ast.Attribute) and isinstance(stmt.ctx, ast.Store) \
                        and isinstance(stmt.value, ast.Name):
                    names.add(stmt.attr)
                elif isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Name) and stmt.func.id == "setattr":
                    return None  # dynamic attributes: not checkable
            for stmt in cdef.body:
                if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                        names.update(_target_names(target))
            for base in cdef.bases:
                kind = self._static_kind(base)
                if kind and kind.startswith("class:") and self.ns.has_class(kind[6:]):
                    manim_keys.append(kind[6:])
                elif isinstance(base, ast.Name) and base.id in self.classdefs \
                        and self.binding_sites.get(base.id) == 1:
                    todo.append(self.classdefs[base.id])
                else:
                    return None  # a base we cannot see into
        if not any(self.ns.is_subclass(k, SCENE_KEY) or self.ns.is_subclass(k, MOBJECT_KEY) for k in manim_keys):
            return None
        return manim_keys, names

    def _check_keywords(self, node: ast.Call) -> None:
        kind = self._static_kind(node.func)
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
