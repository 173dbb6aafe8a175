"""Static marks for known sources of nondeterminism in a Manim script (issue #14).

A script that draws from an unseeded random generator, lays a ``Graph`` out with its default (random) spring
layout or reads the clock renders differently on every run, in the authors' toolkit and here alike: its video
bytes, TD_raw and PADVC are then not reproducible, and a parity or regression comparison of such a sample
proves nothing. This module only *reports* that (it never changes a script): :func:`static_marks` reads the
source (AST, no execution, linear in the text) and lists what it found; :func:`row_fields` turns the marks
and, with ``execute.determinism_check``, the two videos' sha256 into the exec row's fields (``determinism_marks``,
``determinism_sha256``, ``determinism_equal``).
:func:`exec_fields` is the one call the render worker makes (pipeline/actors.py, in the trusted parent, after the
row is made): the marks, and with the check a second render of the script into a private directory.

A seed call without a seed -- ``random.seed()``, ``np.random.seed(None)``, ``random.Random()``,
``np.random.default_rng()``, ``RandomState()``, ``SeedSequence()``, a bit generator without a seed -- seeds from
the operating system's entropy: it is a mark itself and seeds nothing (draws of that module stay marked unless
another call seeds it with a value).

:func:`static_marks` and :func:`row_fields` are pure: no Manim import, no I/O. What it does not see (documented,
not hidden): randomness reached through a
helper module or ``getattr``, ``hash()``-dependent set/dict orders of strings (PYTHONHASHSEED), and manim
calls with a random default other than the ones listed in ``RANDOM_MANIM_NAMES`` / ``GRAPH_CLASSES``, and clocks
other than ``CLOCK_CALLS`` and numpy's ``datetime64("now"|"today")``.
"""

from __future__ import annotations

import ast
import logging
from dataclasses import asdict, dataclass

from prism_fast.execute.scene_select import _dotted  # `a.b.c` of a Name/Attribute chain

log = logging.getLogger(__name__)

# manim helpers that draw from the `random` module
RANDOM_MANIM_NAMES = frozenset({"random_color", "random_bright_color"})
# manim graph classes: default layout "spring" = networkx spring_layout with seed None
GRAPH_CLASSES = frozenset({"Graph", "DiGraph"})
RANDOM_LAYOUTS = frozenset({"spring", "random"})
SEEDLESS_OK_NUMPY = frozenset({"seed", "RandomState", "default_rng", "Generator", "SeedSequence", "PCG64",
                               "PCG64DXSM", "MT19937", "Philox", "SFC64", "BitGenerator", "get_state", "set_state"})
# numpy.random calls that seed from the OS when given no seed (or None): name -> the seed's keyword
NUMPY_SEEDERS = {"seed": "seed", "default_rng": "seed", "RandomState": "seed", "SeedSequence": "entropy",
                 "PCG64": "seed", "PCG64DXSM": "seed", "MT19937": "seed", "Philox": "seed", "SFC64": "seed"}
# random-module calls that seed from the OS when given no seed (or None): name -> the seed's keyword
RANDOM_SEEDERS = {"seed": "a", "Random": "x"}
CLOCK_CALLS = frozenset({("time", "time"), ("time", "time_ns"), ("time", "perf_counter"), ("time", "monotonic"),
                         ("datetime", "now"), ("datetime", "today"), ("date", "today"), ("uuid", "uuid4"),
                         ("uuid", "uuid1"), ("os", "urandom"), ("secrets", "token_hex"), ("secrets", "randbelow"),
                         ("secrets", "choice")})

KIND_RANDOM = "unseeded_random"
KIND_NUMPY = "unseeded_numpy_random"
KIND_GRAPH = "random_graph_layout"
KIND_CLOCK = "clock_or_entropy"
KINDS = (KIND_RANDOM, KIND_NUMPY, KIND_GRAPH, KIND_CLOCK)


@dataclass(frozen=True)
class Mark:
    """One place where the script draws from a source that changes between runs."""

    kind: str      # one of KINDS
    name: str      # what was called, as written (e.g. "random.randint", "np.random.rand", "Graph")
    line: int

    def as_dict(self) -> dict:
        return asdict(self)


class _Aliases(ast.NodeVisitor):
    """Names bound by imports: module aliases and names imported from random / numpy.random / time …"""

    def __init__(self):
        self.random_mod: set[str] = set()       # names for the `random` module
        self.numpy_mod: set[str] = set()        # names for `numpy`
        self.np_random_mod: set[str] = set()    # names for `numpy.random`
        self.from_random: set[str] = set()      # functions imported from `random`
        self.from_np_random: dict[str, str] = {}  # local name -> numpy.random function
        self.modules: dict[str, str] = {}       # local name -> module (time, datetime, uuid, os, secrets)
        self.from_modules: dict[str, tuple[str, str]] = {}  # local name -> (module, attr)
        self.star_manim = False
        self.from_numpy_clock: set[str] = set()  # numpy's datetime64 imported by name

    def visit_Import(self, node):
        for a in node.names:
            local = a.asname or a.name.split(".")[0]
            if a.name == "random":
                self.random_mod.add(local)
            elif a.name == "numpy":
                self.numpy_mod.add(local)
            elif a.name == "numpy.random":
                if a.asname:
                    self.np_random_mod.add(a.asname)
                else:
                    self.numpy_mod.add("numpy")
            elif a.name.split(".")[0] in ("time", "datetime", "uuid", "os", "secrets"):
                self.modules[local] = a.name.split(".")[0]

    def visit_ImportFrom(self, node):
        mod = node.module or ""
        for a in node.names:
            local = a.asname or a.name
            if a.name == "*":
                if mod == "manim":  # manim's namespace exports numpy as `np`
                    self.star_manim = True
                    self.numpy_mod.add("np")
                continue
            if mod == "random":
                self.from_random.add(local)
            elif mod == "numpy" and a.name == "random":
                self.np_random_mod.add(local)
            elif mod == "numpy.random":
                self.from_np_random[local] = a.name
            elif mod in ("time", "datetime", "uuid", "os", "secrets"):
                self.from_modules[local] = (mod, a.name)
            elif mod == "numpy" and a.name in ("datetime64", "datetime_as_string"):
                self.from_numpy_clock.add(local)


def _keyword(call: ast.Call, name: str):
    return next((k.value for k in call.keywords if k.arg == name), None)


def _graph_layout_is_random(call: ast.Call) -> bool:
    """manim ``Graph(vertices, edges, layout="spring", layout_config=None, …)``: random unless the layout is a
    deterministic one (or a dict / callable of positions), or ``layout_config`` passes a ``seed``."""
    layout = _keyword(call, "layout")
    if layout is None and len(call.args) >= 3:
        layout = call.args[2]
    if layout is not None:
        if not (isinstance(layout, ast.Constant) and isinstance(layout.value, str)):
            return False  # positions given, or a variable we cannot read: not claimed
        if layout.value not in RANDOM_LAYOUTS:
            return False
    config = _keyword(call, "layout_config")
    if isinstance(config, ast.Dict):
        if any(isinstance(k, ast.Constant) and k.value == "seed" for k in config.keys):
            return False
    elif config is not None:
        return False  # built elsewhere: not claimed
    return True


def _seedless(call: ast.Call, keyword: str) -> bool | None:
    """A seeding call's seed: True when it has none (no argument, or a literal ``None``: the generator seeds from the
    OS), False when it has one, None when it cannot be read (``*args`` / ``**kwargs``: not claimed either way)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    value = call.args[0] if call.args else _keyword(call, keyword)
    return value is None or (isinstance(value, ast.Constant) and value.value is None)


def static_marks(source: str) -> list[Mark]:
    """Every call in ``source`` that draws from a run-dependent source; ``[]`` when none was found or the
    source does not parse. A module seeded with a value anywhere in the script (``random.seed(1)``,
    ``np.random.seed(0)``) is treated as seeded everywhere: the marks are for the *unseeded* case. A seed call
    without a seed (``random.seed()``, ``np.random.seed(None)``, ``default_rng()``, ``random.Random()``, ...)
    seeds from the OS: it is marked and seeds nothing. One parse and one pass over the calls: linear in the text;
    the script is never executed."""
    try:
        tree = ast.parse(source)
        return _marks(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []


def _marks(tree: ast.AST) -> list[Mark]:
    al = _Aliases()
    al.visit(tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]

    def np_random_attr(func) -> str | None:
        """The numpy.random function a call target names, if any."""
        dotted = _dotted(func)
        if dotted is None:
            return None
        parts = dotted.split(".")
        if len(parts) == 3 and parts[0] in al.numpy_mod and parts[1] == "random":
            return parts[2]
        if len(parts) == 2 and parts[0] in al.np_random_mod:
            return parts[1]
        if len(parts) == 1 and parts[0] in al.from_np_random:
            return al.from_np_random[parts[0]]
        return None

    def random_attr(func) -> str | None:
        dotted = _dotted(func)
        if dotted is None:
            return None
        parts = dotted.split(".")
        if len(parts) == 2 and parts[0] in al.random_mod:
            return parts[1]
        if len(parts) == 1 and parts[0] in al.from_random:
            return parts[0]
        return None

    # a module counts as seeded only by a seed call with a seed (``random.seed()`` reseeds from the OS)
    random_seeded = any(random_attr(c.func) == "seed" and _seedless(c, "a") is not True for c in calls)
    numpy_seeded = any(np_random_attr(c.func) == "seed" and _seedless(c, "seed") is not True for c in calls)
    marks: list[Mark] = []
    for c in calls:
        name = _dotted(c.func) or "?"
        line = getattr(c, "lineno", 0)
        r = random_attr(c.func)
        if r in RANDOM_SEEDERS:  # random.seed() / random.Random(): seeded from the OS without a seed
            if _seedless(c, RANDOM_SEEDERS[r]):
                marks.append(Mark(KIND_RANDOM, name, line))
            continue
        if r is not None and r not in ("getstate", "setstate", "SystemRandom"):
            if not random_seeded:
                marks.append(Mark(KIND_RANDOM, name, line))
            continue
        if r == "SystemRandom":
            marks.append(Mark(KIND_CLOCK, name, line))
            continue
        n = np_random_attr(c.func)
        if n is not None:
            if n in NUMPY_SEEDERS:  # np.random.seed(None), default_rng(), RandomState(), PCG64(), SeedSequence()
                if _seedless(c, NUMPY_SEEDERS[n]):
                    marks.append(Mark(KIND_NUMPY, name, line))  # a fresh OS-seeded generator / global state
            elif n not in SEEDLESS_OK_NUMPY and not numpy_seeded:
                marks.append(Mark(KIND_NUMPY, name, line))
            continue
        if isinstance(c.func, ast.Name):
            if c.func.id in RANDOM_MANIM_NAMES and al.star_manim and not random_seeded:
                marks.append(Mark(KIND_RANDOM, name, line))
                continue
            if c.func.id in GRAPH_CLASSES and _graph_layout_is_random(c):
                marks.append(Mark(KIND_GRAPH, name, line))
                continue
        dotted = name.split(".")
        if len(dotted) >= 2 and dotted[0] == "manim" and dotted[-1] in GRAPH_CLASSES and _graph_layout_is_random(c):
            marks.append(Mark(KIND_GRAPH, name, line))
            continue
        if len(dotted) >= 2:
            head = al.modules.get(dotted[0]) or (al.from_modules.get(dotted[0]) or (None, None))[1]
            if head is not None and (head, dotted[-1]) in CLOCK_CALLS:
                marks.append(Mark(KIND_CLOCK, name, line))
                continue
        if len(dotted) == 1 and dotted[0] in al.from_modules and al.from_modules[dotted[0]] in CLOCK_CALLS:
            marks.append(Mark(KIND_CLOCK, name, line))
            continue
        # numpy's clock: `np.datetime64("now")` / `("today")` (a red team timed copies against it)
        numpy_datetime = (len(dotted) == 2 and dotted[0] in al.numpy_mod and dotted[1] == "datetime64") or (
            len(dotted) == 1 and dotted[0] in al.from_numpy_clock)
        if numpy_datetime and c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value in ("now", "today"):
            marks.append(Mark(KIND_CLOCK, name, line))
    marks.sort(key=lambda m: (m.line, m.kind, m.name))
    return marks


def row_fields(marks: list[Mark], sha256s: tuple[str | None, str | None] | None = None) -> dict:
    """The exec row's fields (schema.py): ``determinism_marks`` (the static marks as a list of ``{kind, name,
    line}``, null when none), ``determinism_sha256`` (``[first, second]`` video sha256 of a double render, the
    second null when that render made no video; null without a double render) and ``determinism_equal`` (both
    present and equal; null without a double render)."""
    equal = None
    if sha256s is not None:
        equal = sha256s[0] is not None and sha256s[0] == sha256s[1]
    return {"determinism_marks": [m.as_dict() for m in marks] or None,
            "determinism_sha256": list(sha256s) if sha256s is not None else None,
            "determinism_equal": equal}


def exec_fields(sample_id: str, script_text: str, row: dict, cfg, profile, runner=None) -> dict:
    """The determinism fields of one exec row, computed by the trusted parent after the render (the render worker,
    pipeline/actors.py): the static marks of the script's text, and with ``cfg.determinism_check``
    (``execute.determinism_check``) a second render of the script -- the same settings, no render cache, into a
    private directory of this process that is removed afterwards -- whose video's sha256 is compared with the row's
    video (warned when they differ). A row without a video (a failed render) is not rendered again. The second
    render's Manim executions are added to the row's (``manim_executions`` in the returned fields). The row itself
    is not changed."""
    marks = static_marks(script_text)
    if marks:
        log.info("render %s: %d nondeterminism mark(s): %s", sample_id, len(marks),
                 ", ".join(f"{m.kind}:{m.name}@{m.line}" for m in marks[:4]))
    if not getattr(cfg, "determinism_check", False) or not row.get("success") or not row.get("video_path"):
        return row_fields(marks)
    from dataclasses import replace

    from prism_fast.execute import sandbox
    from prism_fast.execute.render import render_one
    from prism_fast.fsutil import sha256_file

    try:
        first = sha256_file(row["video_path"])
    except OSError as exc:
        log.warning("render %s: determinism check skipped, the video is unreadable (%s)", sample_id, exc)
        return row_fields(marks)
    second = None
    with sandbox.owned_dir(sandbox.scratch_root(cfg.tmp_root), "determinism_") as out:
        again = render_one(sample_id, script_text, out, replace(cfg, cache_dir=None, keep_temp=False), profile,
                           row.get("file_path"), runner)
        if again.get("success") and again.get("video_path"):
            try:
                second = sha256_file(again["video_path"])
            except OSError:
                second = None
    before = row.get("manim_executions")
    if before is None:  # (as the summary counts a row without the field: pipeline/summary.py)
        before = 0 if row.get("cache_hit") or row.get("skipped") else 1
    executions = before + (again.get("manim_executions") or 1)
    if first != second:
        log.warning("render %s: two renders of the script gave different videos (sha256 %s vs %s%s); its video, "
                    "TD and PADVC are not reproducible (row: determinism_equal=false)", sample_id, first[:12],
                    (second or "none")[:12], "" if second else f": {again.get('error_kind')}")
    return {**row_fields(marks, (first, second)), "manim_executions": executions}


__all__ = ["KINDS", "Mark", "exec_fields", "row_fields", "static_marks"]
