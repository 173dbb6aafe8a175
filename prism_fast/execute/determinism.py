"""Static marks for known sources of nondeterminism in a Manim script (issue #14).

A script that draws from an unseeded random generator, lays a ``Graph`` out with its default (random) spring
layout or reads the clock renders differently on every run, in the authors' toolkit and here alike: its video
bytes, TD_raw and PADVC are then not reproducible, and a parity or regression comparison of such a sample
proves nothing. This module only *reports* that (it never changes a script): :func:`static_marks` reads the
source (AST, no execution) and lists what it found; :func:`determinism_fields` turns the marks and, when the
caller rendered the script twice (no ``execute`` setting does so yet), the two videos' sha256 into the row
fields.

Pure: no Manim import, no I/O. What it does not see (documented, not hidden): randomness reached through a
helper module or ``getattr``, ``hash()``-dependent set/dict orders of strings (PYTHONHASHSEED), and manim
calls with a random default other than the ones listed in ``RANDOM_MANIM_NAMES`` / ``GRAPH_CLASSES``, and clocks
other than ``CLOCK_CALLS`` and numpy's ``datetime64("now"|"today")``.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass

from prism_fast.execute.scene_select import _dotted  # `a.b.c` of a Name/Attribute chain

# manim helpers that draw from the `random` module
RANDOM_MANIM_NAMES = frozenset({"random_color", "random_bright_color"})
# manim graph classes: default layout "spring" = networkx spring_layout with seed None
GRAPH_CLASSES = frozenset({"Graph", "DiGraph"})
RANDOM_LAYOUTS = frozenset({"spring", "random"})
SEEDLESS_OK_NUMPY = frozenset({"seed", "RandomState", "default_rng", "Generator", "SeedSequence", "PCG64",
                               "MT19937", "get_state", "set_state"})
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


def static_marks(source: str) -> list[Mark]:
    """Every call in ``source`` that draws from a run-dependent source; ``[]`` when none was found or the
    source does not parse. A module seeded anywhere in the script (``random.seed(...)``,
    ``np.random.seed(...)``) is treated as seeded everywhere: the marks are for the *unseeded* case."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
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

    random_seeded = any(random_attr(c.func) == "seed" for c in calls)
    numpy_seeded = any(np_random_attr(c.func) == "seed" for c in calls)
    marks: list[Mark] = []
    for c in calls:
        name = _dotted(c.func) or "?"
        line = getattr(c, "lineno", 0)
        r = random_attr(c.func)
        if r is not None and r not in ("seed", "Random", "getstate", "setstate", "SystemRandom"):
            if not random_seeded:
                marks.append(Mark(KIND_RANDOM, name, line))
            continue
        if r == "SystemRandom":
            marks.append(Mark(KIND_CLOCK, name, line))
            continue
        n = np_random_attr(c.func)
        if n is not None:
            if n == "default_rng" and not c.args and _keyword(c, "seed") is None:
                marks.append(Mark(KIND_NUMPY, name, line))  # a fresh OS-seeded generator
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


def determinism_fields(marks: list[Mark], first_sha256: str | None = None,
                       second_sha256: str | None = None) -> dict:
    """Row fields. ``determinism``: ``nondeterministic`` when a second render's video differs from the first;
    ``deterministic`` when both exist and are equal; ``unchecked`` otherwise (no double render, or a render
    failed). ``determinism_marks``: the static marks; ``determinism_suspect``: at least one mark."""
    if first_sha256 and second_sha256:
        verdict = "nondeterministic" if first_sha256 != second_sha256 else "deterministic"
    else:
        verdict = "unchecked"
    return {"determinism": verdict, "determinism_suspect": bool(marks),
            "determinism_marks": [m.as_dict() for m in marks]}


__all__ = ["KINDS", "Mark", "determinism_fields", "static_marks"]
