"""Expected render cost of a script, read from its text: the order in which a stage hands out renders.

A run's wall time is the longest worker's busy time. Handing out renders in input order leaves a long one for
the end (one worker busy, the others idle); handing out the expected-longest first keeps every worker busy until
the queue runs dry (longest-processing-time-first scheduling). Only the *order* depends on this estimate: every
row, video and report is the same whatever the order (tests/pipeline/test_schedule.py).

The estimate is static (the script is never run or imported here) and cheap (one ``ast.parse``):

    cost = BASE + PER_SECOND · (animated seconds) + PER_TEX · (LaTeX-backed mobjects) + PER_TEXT · (Pango texts)

* animated seconds: every ``self.play`` counts its literal ``run_time`` (1 s by default, and when it is not a
  literal), every ``self.wait`` its literal duration (1 s by default); a call inside ``for … in range(<literal>)``
  counts that many times (capped), inside any other loop ``LOOP_GUESS`` times; a ``ThreeDScene`` costs
  ``THREE_D`` times as much per second (Cairo shading of surfaces);
* LaTeX-backed mobjects: constructor calls of ``MathTex``/``Tex``/…; coordinate systems with numbers
  (``Axes``, ``NumberLine``, ``NumberPlane``) count ``AXES_TEX`` each (their labels are ``MathTex``);
* Pango texts: ``Text``/``MarkupText``/``Paragraph``/``Code``.

The weights are CPU-seconds on one core, fitted by eye to the exec rows of the open parity corpus
(docs/scaling.md, "Scheduling"); a script that does not parse costs ``BASE`` (it fails fast).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import TypeVar

BASE = 1.5
PER_SECOND = 0.35
PER_TEX = 0.25
PER_TEXT = 0.08
AXES_TEX = 6
THREE_D = 3.0
LOOP_GUESS = 4
MAX_LOOP = 1000
MAX_SOURCE_CHARS = 1 << 20

TEX_NAMES = frozenset({"MathTex", "Tex", "SingleStringMathTex", "BulletedList", "Title", "MathTable",
                       "DecimalNumber", "Integer", "Variable", "Matrix", "IntegerMatrix", "DecimalMatrix",
                       "BraceLabel", "BraceText", "Brace"})
AXES_NAMES = frozenset({"Axes", "NumberLine", "NumberPlane", "ThreeDAxes", "ComplexPlane", "PolarPlane",
                        "BarChart"})
TEXT_NAMES = frozenset({"Text", "MarkupText", "Paragraph", "Code", "Table", "MobjectTable"})

T = TypeVar("T")


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def literal_number(node: ast.AST) -> float | None:
    """The value of a numeric literal (``-x`` included), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = literal_number(node.operand)
        return -v if v is not None else None
    return None


def _loop_count(node: ast.For | ast.While | ast.AsyncFor) -> float:
    if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _name(node.iter.func) == "range":
        nums = [literal_number(a) for a in node.iter.args]
        if nums and len(nums) <= 3 and all(n is not None for n in nums) and (len(nums) < 3 or nums[2] != 0):
            try:
                return float(min(len(range(*[int(n) for n in nums])), MAX_LOOP))
            except (ValueError, OverflowError):
                return float(LOOP_GUESS)
    return float(LOOP_GUESS)


def call_seconds(call: ast.Call) -> float:
    """The literal duration of ``self.play(...)`` / ``self.wait(...)`` (1 s when not a literal)."""
    dur = 1.0
    if _name(call.func) == "wait":
        if call.args and literal_number(call.args[0]) is not None:
            dur = literal_number(call.args[0])
        for kw in call.keywords:
            if kw.arg == "duration" and literal_number(kw.value) is not None:
                dur = literal_number(kw.value)
    else:
        for kw in call.keywords:
            if kw.arg == "run_time" and literal_number(kw.value) is not None:
                dur = literal_number(kw.value)
    return max(float(dur), 0.0)


def script_features(source: str) -> dict | None:
    """``{seconds, tex, text, three_d}`` of a script (None: it does not parse)."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    feats = {"seconds": 0.0, "tex": 0.0, "text": 0.0, "three_d": False}
    stack: list[tuple[ast.AST, float]] = [(tree, 1.0)]
    while stack:   # iterative: a deeply nested script must not hit the recursion limit here
        node, mult = stack.pop()
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
            k = _loop_count(node)
            stack.extend((child, min(mult * k, float(MAX_LOOP))) for child in node.body + node.orelse)
            stack.append((node.iter if isinstance(node, (ast.For, ast.AsyncFor)) else node.test, mult))
            continue
        if isinstance(node, ast.ClassDef) and any("ThreeD" in _name(b) for b in node.bases):
            feats["three_d"] = True
        if isinstance(node, ast.Call):
            fname = _name(node.func)
            if fname in ("play", "wait") and isinstance(node.func, ast.Attribute):
                feats["seconds"] += mult * call_seconds(node)
            elif fname in TEX_NAMES:
                feats["tex"] += mult
            elif fname in AXES_NAMES:
                feats["tex"] += mult * AXES_TEX
            elif fname in TEXT_NAMES:
                feats["text"] += mult
        stack.extend((child, mult) for child in ast.iter_child_nodes(node))
    return feats


def expected_render_cost(source: str | None) -> float:
    """Expected CPU-seconds of a ``-ql`` render of ``source`` (module docstring); only its order matters."""
    feats = script_features(source) if source is not None else None
    if feats is None:
        return BASE
    per_second = PER_SECOND * (THREE_D if feats["three_d"] else 1.0)
    return BASE + per_second * feats["seconds"] + PER_TEX * feats["tex"] + PER_TEXT * feats["text"]


def longest_first(items: Iterable[T], cost_of) -> list[T]:
    """``items`` sorted by decreasing ``cost_of(item)``; equal costs keep their input order (stable), so the
    order is a pure function of the inputs."""
    indexed: Sequence[tuple[int, T]] = list(enumerate(items))
    costs = {i: float(cost_of(item)) for i, item in indexed}
    return [item for i, item in sorted(indexed, key=lambda p: (-costs[p[0]], p[0]))]
