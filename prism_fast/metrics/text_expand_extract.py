"""Static extraction of on-screen text from a generated Manim script (spec text_expand.md §2–§4).

Pure functions over source text: no Manim, no I/O. Two modes:

* ``ast`` — a small abstract interpreter walks the module (§3): module-level statements bind constants, then the
  ``construct`` body of every top-level class is walked, calls to top-level functions and ``self`` methods are
  simulated, and text-producing calls (§2) contribute their constant-evaluated arguments.
* ``fallback_scan`` — used only when parsing raises ``SyntaxError`` (§4): a line-based tolerant environment plus a
  regex scan for text-producing calls with a quote-aware argument splitter.

Every quirk of the authors' toolkit (README §5.6, Q-TEXT-1…4, 6…8) is a switch of the ``Profile``; the branch
points cite the quirk id. Q-TEXT-5 (manifest format) lives in ``text_expand_run``.
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass
from typing import Any, Iterator

from prism_fast.metrics.text_expand_text import tokenize
from prism_fast.profile import REFERENCE, Profile


class _Unknown:
    """Sentinel for a value the constant evaluator cannot determine."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

MODE_AST = "ast"
MODE_FALLBACK = "fallback_scan"


# --------------------------------------------------------------------------------------------------------------
# §2 argument-selection tables
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ArgSelection:
    """Which arguments of a matched call hold display text.

    ``positional`` is ``None`` (no positional), ``"all"``, or the index of the single positional taken
    (``0`` is the table's "first"). ``keywords`` are the keyword names taken.
    """

    positional: int | str | None = None
    keywords: tuple[str, ...] = ()


_TABLE_ARGS = ArgSelection(0, ("row_labels", "col_labels", "top_left_entry"))

CONSTRUCTORS: dict[str, ArgSelection] = {
    **{name: ArgSelection(0) for name in ("Text", "MarkupText", "Title")},
    **{name: ArgSelection("all") for name in (
        "Paragraph", "BulletedList", "Tex", "MathTex", "TexText", "SingleStringMathTex", "TextMobject",
        "TexMobject")},
    "Code": ArgSelection(0, ("code",)),
    "BraceLabel": ArgSelection(1, ("text", "label_constructor", "label")),
    "LabeledDot": ArgSelection(0, ("label",)),
    "LabeledLine": ArgSelection(2, ("label",)),
    **{name: _TABLE_ARGS for name in ("Table", "MathTable", "MobjectTable", "DecimalTable", "IntegerTable")},
    **{name: ArgSelection(0) for name in ("Matrix", "MobjectMatrix", "DecimalMatrix", "IntegerMatrix")},
    "BarChart": ArgSelection(None, ("bar_names", "y_axis_label", "x_axis_label")),
}

# Q-TEXT-3 improved: Manim 0.19's Code takes a file path positionally; the source text is `code_string=`.
_CODE_IMPROVED = ArgSelection(None, ("code_string", "code"))

METHODS: dict[str, ArgSelection] = {
    "add_labels": ArgSelection(0),
    "get_axis_labels": ArgSelection("all", ("x_label", "y_label")),
    "get_x_axis_label": ArgSelection("all", ("label",)),
    "get_y_axis_label": ArgSelection("all", ("label",)),
    "get_graph_label": ArgSelection("all", ("label",)),
    "add_coordinates": ArgSelection(0),
    "set_title": ArgSelection(0),
}


def constructor_table(profile: Profile) -> dict[str, ArgSelection]:
    """The constructor table of §2.1 under ``profile``."""
    if profile.fixes("Q-TEXT-3"):  # improved: Code reads code_string=/code=, never positional 0
        return {**CONSTRUCTORS, "Code": _CODE_IMPROVED}
    return CONSTRUCTORS


def flatten_to_strings(value: Any) -> list[str]:
    """Flatten a constant into display strings (§2): str kept, numbers/bools via ``str``, containers recursed
    (dict: values only), everything else (None, UNKNOWN, bytes, …) dropped. Blank strings are kept here; the
    callers drop them."""
    if value is UNKNOWN or value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (int, float, bool)):
        return [str(value)]
    if isinstance(value, (list, tuple, set)):
        return [text for item in value for text in flatten_to_strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in flatten_to_strings(item)]
    return []


def _non_blank(texts: list[str]) -> list[str]:
    return [text for text in texts if isinstance(text, str) and text.strip()]


def callee_name(func: ast.expr) -> str | None:
    """``f`` for ``f(...)``, ``attr`` for ``x.attr(...)``, else None."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def bind_target(target: ast.expr, value: Any, env: dict) -> None:
    """Bind an assignment target: names directly, tuple/list targets element-wise (zip-truncated) when the
    value is a list or tuple; anything else binds nothing."""
    if isinstance(target, ast.Name):
        env[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (list, tuple)):
        for child, child_value in zip(target.elts, value):
            bind_target(child, child_value, env)


def unbind_target(target: ast.expr, env: dict) -> None:
    """Mark every name of an assignment target as UNKNOWN (shadowing any global binding)."""
    if isinstance(target, ast.Name):
        env[target.id] = UNKNOWN
    elif isinstance(target, (ast.Tuple, ast.List)):
        for child in target.elts:
            unbind_target(child, env)
    elif isinstance(target, ast.Starred):
        unbind_target(target.value, env)


# --------------------------------------------------------------------------------------------------------------
# Work bounds. The walk runs in the driver on untrusted code: a literal ``range(10**9)`` would be unrolled item by
# item (the toolkit takes ~45 s per million), ``f"{x:>300000000}"`` allocates 300 MB. Past these bounds the row is
# ``parse_fail`` with an ``ExtractionBudgetExceeded`` detail instead of stalling the run; real scripts stay far
# below them (the toolkit would spend minutes on any script that reached them).
# --------------------------------------------------------------------------------------------------------------

MAX_RANGE_ITEMS = 1_000_000  # the longest literal range materialised
MAX_LOOP_ITEMS = 1_000_000  # loop iterations unrolled in one extraction, all loops together
MAX_FORMAT_WIDTH = 100_000  # the widest format spec applied
_FORMAT_WIDTH = re.compile(r"(\d+)")


class ExtractionBudgetExceeded(Exception):
    """The script asks the static walk for more work than any display text needs (see the bounds above)."""


def _check_spec_width(spec: str) -> None:
    """Width and precision of one format spec (``>300000000``, ``.300000000f``) against MAX_FORMAT_WIDTH."""
    widest = max((int(w) for w in _FORMAT_WIDTH.findall(spec)), default=0)
    if widest > MAX_FORMAT_WIDTH:
        raise ExtractionBudgetExceeded(f"format width {widest} (bound {MAX_FORMAT_WIDTH})")


def _check_template_widths(template: str) -> None:
    """Every replacement field's spec of a ``str.format`` template (nested specs included); the literal text is
    not a spec (a template may hold long numbers). A malformed template is left to ``format`` to reject."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return
    for _literal, _name, spec, _conversion in fields:
        if spec:
            _check_spec_width(spec)
            _check_template_widths(spec)


# --------------------------------------------------------------------------------------------------------------
# §3.4 constant evaluator
# --------------------------------------------------------------------------------------------------------------

class ConstantEvaluator:
    """Evaluates the small expression language of §3.4; anything else is UNKNOWN.

    Names are looked up in the local environment, then in ``global_env``. Exceptions are caught only where the
    toolkit catches them (subscripts, ``range``, ``str.format``); others (e.g. ``enumerate`` with a non-int
    start, an unhashable dict key) propagate and make the row ``parse_fail`` like in the toolkit.
    """

    def __init__(self, profile: Profile = REFERENCE, global_env: dict | None = None):
        self.profile = profile
        self.global_env: dict = {} if global_env is None else global_env
        self._apply_format_specs = profile.fixes("Q-TEXT-4")

    def value(self, node: ast.AST | None, env: dict) -> Any:
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id, self.global_env.get(node.id, UNKNOWN))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = []
            for element in node.elts:
                item = self.value(element, env)
                if item is UNKNOWN:
                    return UNKNOWN
                items.append(item)
            # A set display becomes a list in source order.
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            return self._dict(node, env)
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node, env)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._add(node, env)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.value(node.operand, env)
            return -operand if isinstance(operand, (int, float)) else UNKNOWN
        if isinstance(node, ast.Subscript):
            container = self.value(node.value, env)
            index = self.value(node.slice, env)
            if container is UNKNOWN or index is UNKNOWN:
                return UNKNOWN
            try:
                return container[index]
            except Exception:
                return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.ListComp):
            return self._list_comprehension(node, env)
        return UNKNOWN

    def condition(self, node: ast.expr, env: dict) -> Any:
        """True/False for a known bool, else UNKNOWN (comparisons are never evaluated)."""
        verdict = self.value(node, env)
        return verdict if isinstance(verdict, bool) else UNKNOWN

    def _dict(self, node: ast.Dict, env: dict) -> Any:
        result = {}
        for key_node, value_node in zip(node.keys, node.values):
            # `**spread` has key None, which evaluates to UNKNOWN.
            key = self.value(key_node, env)
            item = self.value(value_node, env)
            if key is UNKNOWN or item is UNKNOWN:
                return UNKNOWN
            result[key] = item  # an unhashable key raises TypeError, as in the toolkit
        return result

    def _fstring(self, node: ast.JoinedStr, env: dict) -> Any:
        parts: list[str] = []
        for piece in node.values:
            if isinstance(piece, ast.Constant):
                parts.append(str(piece.value))
            elif isinstance(piece, ast.FormattedValue):
                value = self.value(piece.value, env)
                if value is UNKNOWN:
                    return UNKNOWN
                has_spec = piece.conversion != -1 or piece.format_spec is not None
                if self._apply_format_specs and has_spec:
                    # Q-TEXT-4 improved: apply the conversion and the format spec like Python does.
                    formatted = self._format_value(value, piece, env)
                    if formatted is UNKNOWN:
                        return UNKNOWN
                    parts.append(formatted)
                else:
                    # Q-TEXT-4 reference: conversion and spec ignored; the value is flattened.
                    parts.extend(flatten_to_strings(value))
            else:
                return UNKNOWN
        return "".join(parts)

    def _format_value(self, value: Any, piece: ast.FormattedValue, env: dict) -> Any:
        converters = {-1: lambda v: v, ord("s"): str, ord("r"): repr, ord("a"): ascii}
        spec = ""
        if piece.format_spec is not None:
            spec = self.value(piece.format_spec, env)
            if not isinstance(spec, str):
                return UNKNOWN
            _check_spec_width(spec)
        try:
            return format(converters[piece.conversion](value), spec)
        except Exception:
            return UNKNOWN

    def _add(self, node: ast.BinOp, env: dict) -> Any:
        left = self.value(node.left, env)
        right = self.value(node.right, env)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        number = (int, float)
        same_kind = (
            (isinstance(left, str) and isinstance(right, str))
            or (isinstance(left, number) and isinstance(right, number))
            or (isinstance(left, list) and isinstance(right, list))
            or (isinstance(left, tuple) and isinstance(right, tuple))
        )
        return left + right if same_kind else UNKNOWN

    def _call(self, node: ast.Call, env: dict) -> Any:
        name = callee_name(node.func)
        if name == "str" and node.args:
            value = self.value(node.args[0], env)
            if value is UNKNOWN or isinstance(value, (list, tuple, set, dict)):
                return UNKNOWN
            return str(value)
        if name == "range":
            bounds = [self.value(arg, env) for arg in node.args]
            if any(bound is UNKNOWN for bound in bounds):
                return UNKNOWN
            try:
                span = range(*bounds)
            except Exception:
                return UNKNOWN
            if len(span) > MAX_RANGE_ITEMS:
                raise ExtractionBudgetExceeded(f"range of {len(span)} items (bound {MAX_RANGE_ITEMS})")
            return list(span)
        if name == "enumerate" and node.args:
            iterable = self.value(node.args[0], env)
            if not isinstance(iterable, (list, tuple)):
                return UNKNOWN
            start = 0
            if len(node.args) > 1:
                start = self.value(node.args[1], env)
                if start is UNKNOWN:
                    return UNKNOWN
            return list(enumerate(iterable, start))  # a non-int start raises, as in the toolkit
        if name == "zip":
            iterables = [self.value(arg, env) for arg in node.args]
            if not all(isinstance(item, (list, tuple)) for item in iterables):
                return UNKNOWN
            return list(zip(*iterables))
        if isinstance(node.func, ast.Attribute) and name == "format":
            template = self.value(node.func.value, env)
            if not isinstance(template, str):
                return UNKNOWN
            args = [self.value(arg, env) for arg in node.args]
            kwargs = {kw.arg: self.value(kw.value, env) for kw in node.keywords if kw.arg}
            if any(v is UNKNOWN for v in args) or any(v is UNKNOWN for v in kwargs.values()):
                return UNKNOWN
            _check_template_widths(template)
            try:
                return template.format(*args, **kwargs)
            except Exception:
                return UNKNOWN
        return UNKNOWN

    def _list_comprehension(self, node: ast.ListComp, env: dict) -> Any:
        if len(node.generators) != 1:
            return UNKNOWN
        generator = node.generators[0]
        iterable = self.value(generator.iter, env)
        if not isinstance(iterable, (list, tuple)):
            return UNKNOWN
        items = []
        for element in iterable:
            child_env = dict(env)
            bind_target(generator.target, element, child_env)
            # An unknown or false `if` clause skips the item.
            if not all(self.condition(test, child_env) is True for test in generator.ifs):
                continue
            item = self.value(node.elt, child_env)
            if item is UNKNOWN:
                return UNKNOWN
            items.append(item)
        return items


# --------------------------------------------------------------------------------------------------------------
# §3 static walk
# --------------------------------------------------------------------------------------------------------------

def _nested_def_key(name: str) -> tuple[str, str]:
    """Environment key of a function defined inside a walked body (Q-TEXT-6 improved). A tuple can never clash
    with a variable name, and it is copied with the environment, so it follows the same block scoping."""
    return ("<nested def>", name)


def _is_staticmethod(func: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)


class StaticTextWalker:
    """The abstract interpreter of §3 over one parsed module."""

    def __init__(self, tree: ast.Module, profile: Profile = REFERENCE):
        self.profile = profile
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, dict[str, ast.FunctionDef]] = {}
        self.module_statements: list[ast.stmt] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = {
                    child.name: child for child in node.body if isinstance(child, ast.FunctionDef)
                }
            else:
                self.module_statements.append(node)
        self.global_env: dict = {}
        self.evaluator = ConstantEvaluator(profile, self.global_env)
        self.constructors = constructor_table(profile)
        self._simulate_nested = profile.fixes("Q-TEXT-6")
        self._unbind_unknown = profile.fixes("Q-TEXT-7")
        self.loop_items = 0  # unrolled so far (MAX_LOOP_ITEMS)

    def extract(self) -> list[str]:
        """Module statements first (texts discarded, constants kept), then every construct in source order."""
        self.global_env.clear()
        self.walk(self.module_statements, self.global_env, None, ())
        texts: list[str] = []
        for class_name, methods in self.classes.items():
            if "construct" in methods:
                texts.extend(self.walk(methods["construct"].body, dict(self.global_env), class_name, ()))
        return texts

    # ---- statements (§3.2) -----------------------------------------------------------------------------------

    def walk(self, statements: list[ast.stmt], env: dict, class_name: str | None, stack: tuple) -> list[str]:
        texts: list[str] = []
        for statement in statements:
            texts.extend(self._statement(statement, env, class_name, stack))
        return texts

    def _statement(self, node: ast.stmt, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        ev = self.evaluator

        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None:  # bare annotation `x: int`
                return []
            texts = self.scan(node.value, env, class_name, stack)
            value = ev.value(node.value, env)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if value is not UNKNOWN:
                    bind_target(target, value, env)
                elif self._unbind_unknown:
                    # Q-TEXT-7 improved: an unknown value unbinds the target (reference keeps the stale constant).
                    unbind_target(target, env)
            return texts
        if isinstance(node, ast.Expr):
            return self.scan(node.value, env, class_name, stack)
        if isinstance(node, ast.Return):
            return self.scan(node.value, env, class_name, stack) if node.value is not None else []
        if isinstance(node, ast.For):
            texts = self.scan(node.iter, env, class_name, stack)
            iterable = ev.value(node.iter, env)
            if isinstance(iterable, (list, tuple)):
                self.loop_items += len(iterable)
                if self.loop_items > MAX_LOOP_ITEMS:
                    raise ExtractionBudgetExceeded(f"more than {MAX_LOOP_ITEMS} loop iterations to unroll")
                for item in iterable:
                    item_env = dict(env)
                    bind_target(node.target, item, item_env)
                    texts.extend(self.walk(node.body, item_env, class_name, stack))
                    # The else block runs once per item, with the item's environment (toolkit behaviour).
                    texts.extend(self.walk(node.orelse, item_env, class_name, stack))
            else:
                body_env = dict(env)
                if self._unbind_unknown:
                    unbind_target(node.target, body_env)  # Q-TEXT-7 improved: the loop variable is unknown
                texts.extend(self.walk(node.body, body_env, class_name, stack))
            return texts
        if isinstance(node, ast.If):
            texts = self.scan(node.test, env, class_name, stack)
            verdict = ev.condition(node.test, env)
            if verdict is not False:
                texts.extend(self.walk(node.body, dict(env), class_name, stack))
            if verdict is not True:
                texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            return texts
        if isinstance(node, ast.While):
            texts = self.scan(node.test, env, class_name, stack)
            texts.extend(self.walk(node.body, dict(env), class_name, stack))
            texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            return texts
        if isinstance(node, ast.With):
            texts = []
            body_env = dict(env)
            for item in node.items:
                texts.extend(self.scan(item.context_expr, env, class_name, stack))
                if self._unbind_unknown and item.optional_vars is not None:
                    unbind_target(item.optional_vars, body_env)  # Q-TEXT-7 improved: `as` target is unknown
            texts.extend(self.walk(node.body, body_env, class_name, stack))
            return texts
        if isinstance(node, ast.Try):
            texts = self.walk(node.body, dict(env), class_name, stack)
            for handler in node.handlers:
                texts.extend(self.walk(handler.body, dict(env), class_name, stack))
            texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            texts.extend(self.walk(node.finalbody, dict(env), class_name, stack))
            return texts
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if self._simulate_nested and isinstance(node, ast.FunctionDef):
                # Q-TEXT-6 improved: remember the nested def so that calls to it are simulated.
                env[_nested_def_key(node.name)] = node
            return []
        if isinstance(node, ast.ClassDef):
            return []
        # Anything else: scan the direct expression children. AugAssign does not update bindings.
        texts = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                texts.extend(self.scan(child, env, class_name, stack))
        if self._unbind_unknown and isinstance(node, ast.AugAssign):
            unbind_target(node.target, env)  # Q-TEXT-7 improved: the new value is not evaluated, so unknown
        return texts

    # ---- expressions (§3.3) ----------------------------------------------------------------------------------

    def scan(self, node: ast.AST, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        texts: list[str] = []
        if isinstance(node, ast.Call):
            texts.extend(self.call_texts(node, env))
            texts.extend(self._simulate_callee(node, env, class_name, stack))
        for child in ast.iter_child_nodes(node):
            texts.extend(self.scan(child, env, class_name, stack))
        return texts

    def call_texts(self, node: ast.Call, env: dict) -> list[str]:
        """The display strings of one call per the tables of §2 (positionals first, then keywords in call
        order)."""
        name = callee_name(node.func)
        selection = self.constructors.get(name) if name is not None else None
        if selection is None and isinstance(node.func, ast.Attribute):
            selection = METHODS.get(node.func.attr)
        if selection is None:
            return []
        chosen: list[ast.expr] = []
        if selection.positional == "all":
            chosen.extend(node.args)
        elif isinstance(selection.positional, int) and len(node.args) > selection.positional:
            chosen.append(node.args[selection.positional])
        chosen.extend(kw.value for kw in node.keywords if kw.arg and kw.arg in selection.keywords)
        texts: list[str] = []
        for expr in chosen:
            texts.extend(flatten_to_strings(self.evaluator.value(expr, env)))
        return _non_blank(texts)

    def _simulate_callee(self, node: ast.Call, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        # The toolkit evaluates the positional arguments of every call, simulated or not.
        arg_values = [self.evaluator.value(arg, env) for arg in node.args]
        func = node.func
        if isinstance(func, ast.Name):
            nested = env.get(_nested_def_key(func.id)) if self._simulate_nested else None
            if nested is not None:
                # Q-TEXT-6 improved: a function nested in the walked body; it closes over the caller's scope.
                return self._simulate(nested, arg_values, class_name, env, stack, kind="nested")
            if func.id in self.functions:
                return self._simulate(self.functions[func.id], arg_values, class_name, env, stack, kind="function")
            init = self.classes.get(func.id, {}).get("__init__")
            if self._simulate_nested and init is not None:
                # Q-TEXT-6 improved: instantiating a top-level class runs its __init__.
                return self._simulate(init, arg_values, func.id, env, stack, kind="method")
            return []
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and class_name in self.classes
            and func.attr in self.classes[class_name]
        ):
            method = self.classes[class_name][func.attr]
            return self._simulate(method, arg_values, class_name, env, stack, kind="method")
        return []

    def _simulate(self, func: ast.FunctionDef, arg_values: list, class_name: str | None, caller_env: dict,
                  stack: tuple, *, kind: str) -> list[str]:
        if self.profile.fixes("Q-TEXT-2"):
            # Q-TEXT-2 improved: a function already on the simulation stack is not entered again.
            key: tuple = (class_name or "", func.name, func.lineno, func.col_offset)
        else:
            # Q-TEXT-2 reference: the key holds the stack depth, so it never matches; recursion ends in
            # RecursionError and the row becomes parse_fail.
            key = (class_name or "", func.name, len(stack))
        if key in stack:
            return []

        local_env = dict(self.global_env)
        if kind == "nested" or not self.profile.fixes("Q-TEXT-8"):
            # Q-TEXT-8 reference: the callee sees the caller's locals. (Improved: nested functions keep this,
            # because they really close over the enclosing scope.)
            local_env.update(caller_env)

        params = list(func.args.posonlyargs) + list(func.args.args)
        if kind == "method" and self.profile.fixes("Q-TEXT-1") and params and not _is_staticmethod(func):
            # Q-TEXT-1 improved: self/cls is the instance; the actual arguments bind to the next parameters.
            local_env[params[0].arg] = UNKNOWN
            params = params[1:]
        if self.profile.fixes("Q-TEXT-8"):
            # Q-TEXT-8 improved: every own parameter shadows globals, even when its value stays unknown.
            every_param = params + list(func.args.kwonlyargs)
            every_param += [a for a in (func.args.vararg, func.args.kwarg) if a is not None]
            for param in every_param:
                local_env[param.arg] = UNKNOWN
        defaults = list(func.args.defaults)
        first_default = len(params) - len(defaults)
        for index, param in enumerate(params):
            if index < len(arg_values):
                local_env[param.arg] = arg_values[index]
            elif index >= first_default:
                default = self.evaluator.value(defaults[index - first_default], local_env)
                if default is not UNKNOWN:
                    local_env[param.arg] = default
        return self.walk(func.body, local_env, class_name, stack + (key,))


# --------------------------------------------------------------------------------------------------------------
# §4 fallback scan
# --------------------------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SIMPLE_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*(?:#.*)?$")
_ALL_CALL_NAMES = sorted(set(CONSTRUCTORS) | set(METHODS), key=lambda n: (-len(n), n))
_CALL_SITE = re.compile(
    r"(?<![A-Za-z0-9_])(?P<prefix>\.??)(?P<name>" + "|".join(map(re.escape, _ALL_CALL_NAMES)) + r")\s*\("
)
_STRING_PREFIX = re.compile(r"(?<![A-Za-z0-9_])[rRuUbBfF]{1,3}(?=(\"\"\"|'''|\"|'))")
_LITERAL_WORDS = re.compile(r"\b(?:True|False|None)\b")
_OPERATOR_CHARS = re.compile(r"[+\-*/%=,:;\[\]{}()]")
_WHITESPACE = re.compile(r"\s+")
_TRIPLE_QUOTES = ('"""', "'''")


def _code_chars(text: str, start: int = 0, *, skip_whole_delimiters: bool = True) -> Iterator[tuple[int, str]]:
    """Yield ``(index, char)`` for the characters of ``text[start:]`` that lie outside string literals.

    Quote handling of the toolkit's loose scanners: ``'``/``"`` and triple quotes open strings; inside a
    single-quoted string a backslash escapes the next character and a newline ends the string; triple-quoted
    strings end only at the same triple quote (no escapes). With ``skip_whole_delimiters=False`` the scan
    resumes one character after an opening or closing triple quote instead of three (the toolkit's
    keyword splitter does this).
    """
    quote: str | None = None
    triple = False
    escaped = False
    index = start
    length = len(text)
    delimiter_step = 3 if skip_whole_delimiters else 1
    while index < length:
        char = text[index]
        if quote is not None:
            if triple:
                if text.startswith(quote * 3, index):
                    quote, triple = None, False
                    index += delimiter_step
                else:
                    index += 1
                continue
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote or char == "\n":
                quote = None
            index += 1
            continue
        if text[index:index + 3] in _TRIPLE_QUOTES:
            quote, triple = char, True
            index += delimiter_step
            continue
        if char in ("'", '"'):
            quote, triple = char, False
            index += 1
            continue
        yield index, char
        index += 1


def parenthesized_argument_text(text: str, open_index: int) -> str:
    """The text between ``text[open_index] == '('`` and its balancing ``)`` (or to the end if unbalanced)."""
    depth = 1
    for index, char in _code_chars(text, open_index + 1):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[open_index + 1:index]
    return text[open_index + 1:]


_OPENERS = {"(": 0, "[": 1, "{": 2}
_CLOSERS = {")": 0, "]": 1, "}": 2}


def split_top_level_arguments(text: str) -> list[str]:
    """Split at commas outside strings and brackets; parts are stripped. Empty middle parts are kept, an empty
    tail is dropped."""
    parts: list[str] = []
    depth = [0, 0, 0]
    part_start = 0
    for index, char in _code_chars(text):
        if char in _OPENERS:
            depth[_OPENERS[char]] += 1
        elif char in _CLOSERS:
            depth[_CLOSERS[char]] -= 1
        elif char == "," and depth == [0, 0, 0]:
            parts.append(text[part_start:index].strip())
            part_start = index + 1
    tail = text[part_start:].strip()
    if tail:
        parts.append(tail)
    return parts


def split_keyword_argument(arg_text: str) -> tuple[str | None, str]:
    """``(name, value_text)`` when a top-level ``=`` has a bare identifier on its left (the first such ``=``),
    else ``(None, stripped_text)``."""
    depth = [0, 0, 0]
    for index, char in _code_chars(arg_text, skip_whole_delimiters=False):
        if char in _OPENERS:
            depth[_OPENERS[char]] += 1
        elif char in _CLOSERS:
            depth[_CLOSERS[char]] -= 1
        elif char == "=" and depth == [0, 0, 0]:
            left = arg_text[:index].strip()
            if _IDENTIFIER.fullmatch(left):
                return left, arg_text[index + 1:].strip()
    return None, arg_text.strip()


def heuristic_text(expr_text: str) -> str:
    """The §4 heuristic text of an expression: string prefixes, quotes and True/False/None removed, operator
    characters turned into spaces, whitespace collapsed; "" unless it yields at least one token."""
    cleaned = _STRING_PREFIX.sub("", expr_text)
    for quote in ('"""', "'''", '"', "'"):
        cleaned = cleaned.replace(quote, " ")
    cleaned = _LITERAL_WORDS.sub(" ", cleaned)
    cleaned = _OPERATOR_CHARS.sub(" ", cleaned)
    cleaned = _WHITESPACE.sub(" ", cleaned).strip()
    return cleaned if tokenize(cleaned) else ""


def evaluate_expression_text(expr_text: str, env: dict, profile: Profile = REFERENCE) -> Any:
    """Constant-evaluate source text with ``env`` as both local and global environment; UNKNOWN when it does
    not parse as an expression."""
    try:
        tree = ast.parse(expr_text, mode="eval")
    except Exception:
        return UNKNOWN
    return ConstantEvaluator(profile, dict(env)).value(tree.body, dict(env))


class FallbackScanner:
    """The fallback mode of §4 over raw (unparsable) source text."""

    def __init__(self, profile: Profile = REFERENCE):
        self.profile = profile
        self.constructors = constructor_table(profile)

    def tolerant_environment(self, code: str) -> dict:
        env: dict = {}
        for line in code.splitlines():
            match = _SIMPLE_ASSIGN.match(line)
            if not match:
                continue
            name, expr_text = match.groups()
            value = evaluate_expression_text(expr_text, env, self.profile)
            if value is UNKNOWN:
                value = heuristic_text(expr_text) or UNKNOWN
            if value is not UNKNOWN:
                env[name] = value
            elif self.profile.fixes("Q-TEXT-7"):
                env.pop(name, None)  # Q-TEXT-7 improved: an unknown assignment unbinds the name
        return env

    def expression_texts(self, expr_text: str, env: dict) -> list[str]:
        expr_text = expr_text.strip()
        if not expr_text:
            return []
        if _IDENTIFIER.fullmatch(expr_text):
            return _non_blank(flatten_to_strings(env.get(expr_text, UNKNOWN)))
        value = evaluate_expression_text(expr_text, env, self.profile)
        if value is not UNKNOWN:
            return _non_blank(flatten_to_strings(value))
        guess = heuristic_text(expr_text)
        return [guess] if guess else []

    def extract(self, code: str) -> list[str]:
        env = self.tolerant_environment(code)
        texts: list[str] = []
        for match in _CALL_SITE.finditer(code):
            name = match.group("name")
            if match.group("prefix") == ".":
                selection = METHODS.get(name)  # after a bare '.', only method names count
            else:
                selection = self.constructors.get(name) or METHODS.get(name)
            if selection is None:
                continue
            arguments = split_top_level_arguments(parenthesized_argument_text(code, match.end() - 1))
            positional: list[str] = []
            keywords: dict[str, str] = {}
            for argument in arguments:
                key, value_text = split_keyword_argument(argument)
                if key is None:
                    positional.append(value_text)
                else:
                    keywords[key] = value_text
            chosen: list[str] = []
            if selection.positional == "all":
                chosen.extend(positional)
            elif isinstance(selection.positional, int) and len(positional) > selection.positional:
                chosen.append(positional[selection.positional])
            chosen.extend(keywords[key] for key in selection.keywords if key in keywords)  # table order
            for expr_text in chosen:
                texts.extend(self.expression_texts(expr_text, env))
        return texts


# --------------------------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Extraction:
    """Extracted display segments, the mode used, and (fallback only) the SyntaxError that forced it."""

    segments: list[str]
    mode: str
    fallback_reason: str | None = None


def extract_display_text(code: str, profile: Profile = REFERENCE) -> Extraction:
    """Extract the on-screen text segments of ``code`` (§3, or §4 when the code raises SyntaxError).

    Exceptions other than SyntaxError propagate (the caller turns them into ``parse_fail``).
    """
    try:
        tree = ast.parse(code)
        return Extraction(StaticTextWalker(tree, profile).extract(), MODE_AST)
    except SyntaxError as exc:
        reason = f"{type(exc).__name__}: {exc}"
        return Extraction(FallbackScanner(profile).extract(code), MODE_FALLBACK, reason)
