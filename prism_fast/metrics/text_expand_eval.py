"""The shared core of TextExpand's two extraction modes (spec text_expand.md §2, §3.4): which call arguments hold
display text (the argument-selection tables), the constant evaluator that turns an argument into strings, and the
work bounds that keep either mode from stalling on untrusted code. Used by the AST walker
(``text_expand_walk``) and the fallback scan (``text_expand_scan``); the entry point is
``text_expand_extract.extract_display_text``. Pure functions over source text: no Manim, no I/O.
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass
from typing import Any

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


def non_blank(texts: list[str]) -> list[str]:
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
