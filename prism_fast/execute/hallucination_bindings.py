"""Pass 1 of the API-hallucination checker (:mod:`prism_fast.execute.hallucination`): what a script binds.

:class:`BindingCollector` walks the parsed script once and records, per scope, every name it binds and how
(a direct call of a class, a method's ``self``, anything else), every import and star import (resolved against the
frozen Manim namespace and the frozen star index, never by importing), attributes stored on names and the
in-file class definitions; ``import`` findings arise here. Its resolution methods (:meth:`~BindingCollector.static_kind`,
:meth:`~BindingCollector.lookup`) answer pass 2's questions: which manim module or class an expression statically
denotes, and which bindings a name refers to in a scope.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import dataclass, field

from prism_fast.execute.manim_namespace import Namespace
from prism_fast.execute.star_index import star_names

log = logging.getLogger("prism_fast.execute.hallucination")


@dataclass(frozen=True)
class Finding:
    kind: str
    identifier: str
    line: int

    def to_dict(self) -> dict:
        return {"kind": self.kind, "identifier": self.identifier, "line": self.line}


# --------------------------------------------------------------------------------------------------------------
# Scopes and bindings
# --------------------------------------------------------------------------------------------------------------

@dataclass
class Scope:
    node: ast.AST
    parent: "Scope | None"
    # name -> list of binding descriptions: ("call", class_key) | ("self", ClassDef) | ("other", None)
    bindings: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    globals_: set[str] = field(default_factory=set)

    def bind(self, name: str, how: tuple[str, object]) -> None:
        self.bindings.setdefault(name, []).append(how)


def is_manim_module(dotted: str) -> bool:
    return dotted == "manim" or dotted.startswith("manim.")


def target_names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


class BindingCollector:
    """Pass 1 over one parsed script (module docstring); :class:`prism_fast.execute.hallucination` adds pass 2."""

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
        self.scopes: dict[int, Scope] = {}
        self.parents: dict[int, ast.AST] = {}
        self.classdefs: dict[str, ast.ClassDef] = {}

    # ----------------------------------------------------------------------------------------------- helpers
    def add(self, kind: str, ident: str, line: int) -> None:
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

    def module_member_kind(self, module: str, attr: str) -> str | None:
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
        module_scope = Scope(self.tree, None)
        self.scopes[id(self.tree)] = module_scope
        self._collect_scope(self.tree, module_scope)

    def _note_binding(self, name: str) -> None:
        self.file_bound.add(name)
        self.binding_sites[name] = self.binding_sites.get(name, 0) + 1

    def _collect_scope(self, node: ast.AST, scope: Scope) -> None:
        for child in ast.iter_child_nodes(node):
            self._collect_node(child, scope)

    def _collect_node(self, node: ast.AST, scope: Scope) -> None:  # noqa: C901 - one dispatch over node kinds
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._note_binding(node.name)
            scope.bind(node.name, ("other", None))
            for deco in node.decorator_list:
                self._collect_node(deco, scope)
            if isinstance(node, ast.ClassDef):
                self.classdefs.setdefault(node.name, node)
                for base in node.bases + [k.value for k in node.keywords]:
                    self._collect_node(base, scope)
                inner = Scope(node, scope)
                self.scopes[id(node)] = inner
                for stmt in node.body:
                    self._collect_node(stmt, inner)
                return
            self._collect_arguments_defaults(node.args, scope)
            if node.returns is not None:
                self._collect_node(node.returns, scope)
            inner = Scope(node, scope)
            self.scopes[id(node)] = inner
            self._bind_arguments(node, inner, scope)
            for stmt in node.body:
                self._collect_node(stmt, inner)
            return
        if isinstance(node, ast.Lambda):
            self._collect_arguments_defaults(node.args, scope)
            inner = Scope(node, scope)
            self.scopes[id(node)] = inner
            self._bind_arguments(node, inner, scope)
            self._collect_node(node.body, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # The first iterable is evaluated in the enclosing scope; everything else in the comprehension's.
            inner = Scope(node, scope)
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

    def _collect_arguments_defaults(self, args: ast.arguments, scope: Scope) -> None:
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self._collect_node(default, scope)
        for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if arg is not None and arg.annotation is not None:
                self._collect_node(arg.annotation, scope)

    def _bind_arguments(self, func: ast.AST, inner: Scope, outer: Scope) -> None:
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

    def _collect_import(self, node: ast.AST, scope: Scope) -> None:
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
                    self.add("import", missing, line)
                    self.import_kinds.setdefault(bound, set()).add("")
                else:
                    target = alias.name if alias.asname else "manim"
                    self.import_kinds.setdefault(bound, set()).add(f"module:{target}")
            return
        module = node.module or ""
        is_manim = node.level == 0 and is_manim_module(module)
        missing = self._first_missing_module(module) if is_manim else None
        if missing:
            self.add("import", missing, line)
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
            kind = self.module_member_kind(module, alias.name)
            if kind is None:
                self.add("import", alias.name, line)
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
    def static_kind(self, node: ast.AST) -> str | None:
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
            base = self.static_kind(node.value)
            if base and base.startswith("module:"):
                module = base[len("module:"):]
                if not is_manim_module(module):
                    return None
                return self.module_member_kind(module, node.attr) or None
        return None

    def lookup(self, scope: Scope, name: str) -> list[tuple[str, object]] | None:
        """Bindings of ``name`` in the scope that a Load in ``scope`` refers to (None if unbound)."""
        current: Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals_:
                current = self.module_scope()
                return current.bindings.get(name)
            if (first or not isinstance(current.node, ast.ClassDef)) and name in current.bindings:
                return current.bindings[name]
            first = False
            current = current.parent
        return None

    def module_scope(self) -> Scope:
        return self.scopes[id(self.tree)]
