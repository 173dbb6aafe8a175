"""What a script can reach beyond what its text shows: the deny-list of reflection shared by every static rule that
decides, from the script's text alone and in trusted code, whether something the script's process runs can be
trusted to behave as if the script had not touched it (the one-pass audit's rule, audit/onepass_rule.py; the TeX
cache's gate, execute/texcache.py). Pure: text in, reasons out.
"""

from __future__ import annotations

import ast
import bisect
import re
import string
import sys

from prism_fast.execute import fastpaths

SAFE_IMPORTS = frozenset({
    "manim", "numpy", "math", "cmath", "random", "itertools", "functools", "collections", "typing", "string",
    "dataclasses", "enum", "fractions", "decimal", "copy", "re", "operator", "statistics", "colorsys",
    "textwrap", "__future__", "abc", "numbers", "heapq", "bisect",
})
# Reflection without a dunder or a flagged name. The render child runs the trusted observer (its state, the
# result's seal) in the script's process, so a script that reaches the observer's module can read the seal or
# rewrite the report. Three routes are refused:
# * a module hop: an attribute named like a standard-library module outside SAFE_IMPORTS (manim's and numpy's
#   modules import ``inspect``, ``os``, ``sys``, ``gc``, ...: ``manim.utils.module_ops.inspect.getmodule(...)``);
#   ``array`` is exempt (``np.array``; the ``array`` module gives no reflection);
# * frame, generator, traceback and code internals (``gen.gi_frame.f_back.f_globals``);
# * attribute access by a string the AST does not show: ``operator.attrgetter``/``methodcaller``,
#   ``str.format`` with a field that reads an attribute or an item (``"{0.x}"``, ``"{0[k]}"``) or on a format
#   string that is not a literal, ``format_map``, ``string.Formatter``, and string annotations (evaluated by
#   ``typing.get_type_hints`` and ``functools.singledispatch``).
MODULE_ATTRS = frozenset(getattr(sys, "stdlib_module_names", ())) - SAFE_IMPORTS - {"array"}
FRAME_ATTRS = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin", "ag_frame", "ag_code",
    "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next",
    "co_code", "co_consts", "co_names", "cell_contents",
})
# Names under which the allowed modules' own attributes hand out an evaluator, an importer, a process or a file
# (``enum.bltns`` is ``builtins``, ``manim.utils.file_ops.sp`` is ``subprocess``, scipy's ``import_module``
# reachable from ``manim.utils.simple_functions``, numpy's ``_datasource._open``), and the reflective builtins as
# attributes (``bltns.getattr``). tests/audit/test_audit_onepass.py walks every module reachable from the allowed
# imports through names this rule accepts and checks that none of these is reached.
REACH_ATTRS = frozenset({
    "bltns", "sp", "import_module", "reload", "module_from_spec", "exec_module", "load_module", "run_path",
    "run_module", "Popen", "_open", "eval", "exec", "getattr", "setattr", "delattr", "globals", "locals", "vars",
    "breakpoint",
    # typing's forward-reference evaluators: `typing._eval_type(typing.Optional["<any expression>"], {}, {})` and
    # `typing.get_args(...)[0]._evaluate(...)` eval a string with builtins
    "_eval_type", "_evaluate", "evaluate_forward_ref", "_type_check", "_type_convert",
})
# the standard-library modules among SAFE_IMPORTS: their private names (``typing._eval_type``,
# ``functools._lru_cache_wrapper``, ``re._compiler``, ...) are internals no scene needs
STDLIB_SAFE = SAFE_IMPORTS - {"manim", "numpy"}
STRING_ACCESS = frozenset({"attrgetter", "methodcaller", "format_map", "Formatter", "get_type_hints", "ForwardRef",
                           "get_annotations", "getclosurevars",
                           # red team: functools copies attributes named by strings, dunders included, between any
                           # two objects -- `update_wrapper(lib_function, f, assigned=("__code__",))` rewrote a
                           # manim function in place (no namespace changes: the patch check cannot see it),
                           # `updated=("__globals__",)` copied a module's globals (the observer's, through the
                           # hooked Scene's methods) into the script's, `wraps(shift)(become)` renamed a method
                           "update_wrapper", "wraps"})
# Library state that runs script code or depends on the frame times without any binding the patch check sees (red
# team): numpy's floating-point error hooks -- `seterrcall(f)` with `seterr(all="call")` runs `f` at every frame whose
# interpolation or camera arithmetic under- or overflows, "raise" fails at the frames one frame rate meets --, the
# warning recorders that count such warnings, and raw memory views (`as_strided` reads and writes past an array:
# any object, a namespace's version tag included)
STATE_HOOKS = frozenset({"seterr", "seterrcall", "errstate", "suppress_warnings", "assert_warns", "catch_warnings",
                         "clear_and_catch_warnings", "as_strided", "DummyArray", "byte_bounds",
                         # copy's reducer registry (`copy.dispatch_table[ManimColor] = f`): the render copies
                         # mobjects with deepcopy, the audit-only run with its own copier (audit/fastcopy.py)
                         "dispatch_table"})
# the call stack without a frame attribute (red team 4): `logger.findCaller`, a record's `stack_info`, rich's
# `console._caller_frame_info` (the locals of any caller frame, the observers' included): execute/fastpaths.py
FRAME_INFO = fastpaths.FRAME_INFO
# setattr by a name the AST need not show: manim's `Mobject.set(self, **kwargs)` called unbound on any object
# (`Mobject.set(f, **{computed: v})` reaches a library function's `__defaults__` or a module's `__class__`), and
# copy's protocol, which sets the state a script's `__reduce__` returns on the object it names
COPY_PROTOCOL = frozenset({"__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__copy__", "__deepcopy__"})
# a dunder spelled as a string or a keyword: what `setattr`-like calls (`Mobject.set(f, __defaults__=...)`, a
# `**{"__code__": ...}`) and functools' attribute lists reach, which the attribute rule refuses as `x.__name__`
DUNDER = re.compile(r"__\w+__")


# The work bound of every static analysis of a script's text that shares this module (the one-pass rule, the TeX
# cache's gate): each is linear in the number of AST nodes, and a script past MAX_NODES is not analysed at all --
# it gets the analysis's safe answer with the reason ANALYSIS_BUDGET (not one-pass eligible; no TeX cache). A
# count, never a time: the same answer on a loaded machine. The bundled samples have under 1 000 nodes, a chain
# of 3000 helper functions 18 000.
MAX_NODES = 200_000
ANALYSIS_BUDGET = "analysis_budget"


def over_budget(tree: ast.AST, limit: int | None = None) -> bool:
    """Whether ``tree`` has more than ``limit`` (default :data:`MAX_NODES`) nodes; stops counting there."""
    limit = MAX_NODES if limit is None else limit
    for count, _ in enumerate(ast.walk(tree), start=1):
        if count > limit:
            return True
    return False


def format_reads_attributes(template: str) -> bool:
    """Whether a ``str.format`` template reads an attribute or an item of an argument (``{0.x}``, ``{a[k]}``)."""
    try:
        fields = [f for _, f, spec, _ in string.Formatter().parse(template) if f is not None]
        specs = [spec for _, f, spec, _ in string.Formatter().parse(template) if spec]
    except ValueError:
        return True
    return any("." in f or "[" in f for f in fields) or any(format_reads_attributes(s) for s in specs)


def annotation_nodes(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
            if getattr(node, "returns", None) is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation




def private(attr: str) -> bool:
    """A single-underscore name (``_x``; dunders and ``__x`` have their own reasons)."""
    return attr.startswith("_") and not attr.startswith("__")


def keyword_forwards(tree: ast.AST) -> set:
    """The ``**kwargs`` arguments that only forward a function's own ``**kwargs`` parameter (``def f(**kw):
    g(**kw)``, a wrapper's usual form): their keys are the callers' keywords, which the rule reads at each call
    site. Only where every use of the name in the function is such a ``**`` (no store, item assignment or method
    call on it).

    One pass over the tree: every node gets its preorder index, so a function's body is an index range and the
    uses of a name in it are counted by bisection (walking each function's body made nested functions cost the
    square of their depth)."""
    index: dict[int, tuple[int, int]] = {}  # id(node) -> (preorder index, index past its subtree)
    names: dict[str, list[int]] = {}  # name -> preorder indices of its Name nodes
    params: dict[str, list[int]] = {}  # name -> preorder indices of the parameters (ast.arg) of that name
    spreads: dict[str, list[tuple[int, ast.keyword]]] = {}  # name -> the `**name` keywords, with their indices
    functions = []
    count = 0
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            index[id(node)] = (index[id(node)][0], count)
            continue
        index[id(node)] = (count, count)
        if isinstance(node, ast.Name):
            names.setdefault(node.id, []).append(count)
        elif isinstance(node, ast.arg):
            params.setdefault(node.arg, []).append(count)
        elif isinstance(node, ast.keyword) and node.arg is None and isinstance(node.value, ast.Name):
            spreads.setdefault(node.value.id, []).append((count, node))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node.args.kwarg is not None:
            functions.append(node)
        count += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(list(ast.iter_child_nodes(node))))

    def within(positions: list[int], lo: int, hi: int) -> int:
        return bisect.bisect_left(positions, hi) - bisect.bisect_left(positions, lo)

    safe = set()
    for fn in functions:
        name = fn.args.kwarg.arg
        body = fn.body if isinstance(fn.body, list) else [fn.body]
        lo, hi = index[id(body[0])][0], index[id(body[-1])][1]  # (a body's statements are consecutive children)
        kws = spreads.get(name, [])
        first, last = bisect.bisect_left(kws, (lo,)), bisect.bisect_left(kws, (hi,))
        uses = within(names.get(name, []), lo, hi)
        if uses == last - first and not within(params.get(name, []), lo, hi):
            safe.update(id(k) for _, k in kws[first:last])
    return safe


def literal_keywords(node: ast.AST) -> bool:
    """A ``**`` argument the rule can read: a dict display whose keys are string constants none of which is a
    private name, a dunder or one of :data:`FRAME_INFO`."""
    return isinstance(node, ast.Dict) and all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) and not k.value.startswith("_")
        and k.value not in FRAME_INFO for k in node.keys)


def a_class(node: ast.AST) -> bool:
    """Whether an expression names a class rather than an instance: a capitalised name (``Mobject``, a script's
    ``Card``) or ``type(x)``."""
    if isinstance(node, ast.Name):
        return node.id[:1].isupper()
    if isinstance(node, ast.Attribute):  # manim.Mobject, mobject_module.Mobject
        return node.attr[:1].isupper()
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"


def import_reasons(node: ast.AST, safe_imports: frozenset) -> list[str]:
    """``import:<module>`` for an import outside ``safe_imports``, ``relative_import`` for a relative one."""
    if isinstance(node, ast.Import):
        return [f"import:{a.name}" for a in node.names if a.name.split(".")[0] not in safe_imports]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return ["relative_import"]
        if (node.module or "").split(".")[0] not in safe_imports:
            return [f"import:{node.module}"]
    return []


# builtins that read, write or run things by a name or a text the AST does not show
REFLECT_NAMES = frozenset({"getattr", "setattr", "delattr", "hasattr", "globals", "locals", "vars", "eval", "exec",
                           "compile", "open", "input", "breakpoint", "memoryview"})
# attributes reaching a module's internals from an allowed import (`np.core.sys`, `manim.utils.file_ops.os`)
INTERNAL_ATTRS = frozenset({"_os", "sys", "_sys", "ctypeslib", "builtins", "modules"})


def reach_reasons(tree: ast.AST, safe_imports: frozenset = SAFE_IMPORTS, module_attrs: frozenset = MODULE_ATTRS,
                  harmless: frozenset = frozenset()) -> list[str]:
    """Why the script may reach, from the text it shows, something other than the names it spells (empty list: it
    cannot, by this deny-list): imports outside ``safe_imports``, relative or private imports, the reflective
    builtins, dunder and single-underscore names and attributes, an attribute named like a standard-library module
    (``module_attrs``: a module hop), frame internals, attribute access by a computed string (``attrgetter``,
    ``str.format`` fields, string annotations, ``**`` keywords the text does not show, manim's ``get_``/``set_``
    attribute magic on such a name), raw memory and library hooks, copy's protocol, ``Class.set(obj, ...)``. The
    one-pass rule (audit/onepass_rule.py) refuses all of these and more; the TeX cache's gate (execute/texcache.py)
    refuses exactly these plus the names of the compile path. ``harmless``: dunder names and attributes the caller
    accepts (``__name__``, ``super().__init__``)."""
    reasons: list[str] = []

    def add(reason: str) -> None:
        if reason not in reasons:
            reasons.append(reason)

    def refused_attr(name: str) -> bool:
        if name in harmless:
            return False
        return (name.startswith("_") or name in module_attrs or name.lstrip("_") in module_attrs
                or name in FRAME_ATTRS or name in REACH_ATTRS or name in STRING_ACCESS or name in STATE_HOOKS
                or name in FRAME_INFO or name in COPY_PROTOCOL or name in INTERNAL_ATTRS)

    forwards = keyword_forwards(tree)
    for node in ast.walk(tree):
        for reason in import_reasons(node, safe_imports):
            add(reason)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if refused_attr(alias.name) or alias.name in REFLECT_NAMES:
                    add(f"import_name:{alias.name}")
        elif isinstance(node, ast.Name):
            if node.id in REFLECT_NAMES or (DUNDER.fullmatch(node.id) and node.id not in harmless):
                add(f"name:{node.id}")
        elif isinstance(node, ast.Attribute):
            if refused_attr(node.attr):
                add(f"attr:{node.attr}")
            elif node.attr[:4] in ("get_", "set_") and (refused_attr(node.attr[4:]) or node.attr[4:] in REFLECT_NAMES):
                add(f"getattr_magic:{node.attr}")  # manim's Mobject.__getattr__: m.get_<x>() is getattr(m, "<x>")
            elif node.attr == "set" and a_class(node.value):
                add("unbound_set")  # Mobject.set(any_object, **{name: value}): setattr on any object
            elif node.attr == "format" and not (isinstance(node.value, ast.Constant)
                                                and isinstance(node.value.value, str)
                                                and not format_reads_attributes(node.value.value)):
                add("string_access:format")
        elif isinstance(node, ast.keyword):
            if node.arg is None and not literal_keywords(node.value) and id(node) not in forwards:
                add("dynamic_keywords")
            elif node.arg is not None and (node.arg.startswith("_") or node.arg in FRAME_INFO):
                add(f"keyword:{node.arg}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DUNDER.fullmatch(node.value) \
                and node.value != "__main__":
            add("string:dunder")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in COPY_PROTOCOL:
            add(f"copy_protocol:{node.name}")
        if isinstance(node, ast.Name) and (node.id in STRING_ACCESS or node.id in STATE_HOOKS
                                           or node.id in FRAME_INFO):
            add(f"name:{node.id}")
    for annotation in annotation_nodes(tree):
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(annotation)):
            add("string_annotation")
    return reasons
