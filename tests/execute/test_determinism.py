"""Static nondeterminism marks (prism_fast/execute/determinism.py, issue #14): pure, no Manim."""

from __future__ import annotations

from prism_fast.execute.determinism import (
    KIND_CLOCK, KIND_GRAPH, KIND_NUMPY, KIND_RANDOM, row_fields, static_marks,
)

HEAD = "from manim import *\nimport numpy as np\nimport random\n"


def kinds(src: str) -> list[str]:
    return [m.kind for m in static_marks(src)]


def test_unseeded_random_module_and_aliases():
    assert kinds(HEAD + "x = random.randint(0, 3)\n") == [KIND_RANDOM]
    assert kinds("import random as rnd\nx = rnd.choice([1, 2])\n") == [KIND_RANDOM]
    assert kinds("from random import uniform as u\nx = u(0, 1)\n") == [KIND_RANDOM]
    assert kinds(HEAD + "c = random_color()\n") == [KIND_RANDOM]           # manim's helper draws from `random`
    assert kinds(HEAD + "random.seed(1)\nx = random.random()\nc = random_color()\n") == []
    assert kinds("def random_color():\n    return 1\nc = random_color()\n") == []  # not manim's (no star import)


def test_numpy_random():
    assert kinds(HEAD + "a = np.random.rand(3)\n") == [KIND_NUMPY]
    assert kinds(HEAD + "np.random.seed(0)\na = np.random.rand(3)\n") == []
    assert kinds("from numpy.random import normal\nv = normal()\n") == [KIND_NUMPY]
    assert kinds("from numpy import random as npr\nv = npr.uniform()\n") == [KIND_NUMPY]
    assert kinds(HEAD + "g = np.random.default_rng()\n") == [KIND_NUMPY]  # seeded by the OS
    assert kinds(HEAD + "g = np.random.default_rng(7)\nv = g.random()\n") == []
    # `np` bound by `from manim import *` alone (manim's namespace exports numpy as np)
    assert kinds("from manim import *\nclass S(Scene):\n    def construct(self):\n"
                 "        d = Dot(point=np.random.uniform(-3, 3, size=3))\n") == [KIND_NUMPY]


def test_graph_layouts():
    assert kinds(HEAD + "g = Graph([1, 2], [(1, 2)])\n") == [KIND_GRAPH]                   # default: spring
    assert kinds(HEAD + "g = DiGraph([1, 2], [(1, 2)], layout='random')\n") == [KIND_GRAPH]
    assert kinds(HEAD + "g = Graph([1, 2], [(1, 2)], layout='circular')\n") == []
    assert kinds(HEAD + "g = Graph([1, 2], [(1, 2)], layout_config={'seed': 3})\n") == []
    assert kinds(HEAD + "g = Graph([1, 2], [(1, 2)], layout={1: ORIGIN, 2: UP})\n") == []
    assert kinds("import manim\ng = manim.Graph([1], [])\n") == [KIND_GRAPH]


def test_clock_and_entropy():
    assert kinds("import time\nt = Text(str(time.time()))\n") == [KIND_CLOCK]
    assert kinds("from datetime import datetime\nd = datetime.now()\n") == [KIND_CLOCK]
    assert kinds("import uuid\nu = uuid.uuid4()\n") == [KIND_CLOCK]
    assert kinds("from manim import *\nt = np.datetime64('now')\n") == [KIND_CLOCK]  # np from manim's star import
    assert kinds("from numpy import datetime64 as d\nt = d('today')\n") == [KIND_CLOCK]
    assert kinds(HEAD + "t = np.datetime64('2026-01-01')\n") == []


def test_deterministic_script_and_unparsable_source():
    src = HEAD + "class S(Scene):\n    def construct(self):\n        self.play(Create(Circle()))\n"
    assert static_marks(src) == []
    assert static_marks("class (:\n") == []


def test_marks_carry_name_and_line_and_fields():
    marks = static_marks(HEAD + "\n\nv = np.random.normal(size=3)\n")
    assert [(m.kind, m.name, m.line) for m in marks] == [(KIND_NUMPY, "np.random.normal", 6)]
    assert row_fields(marks) == {"determinism_marks": [{"kind": KIND_NUMPY, "name": "np.random.normal", "line": 6}],
                                 "determinism_sha256": None, "determinism_equal": None}


def test_seedless_seed_calls_are_marked_and_seed_nothing():
    # a seed call without a seed reseeds from the OS: marked itself, and the module's draws stay marked
    assert kinds(HEAD + "random.seed()\nx = random.random()\n") == [KIND_RANDOM, KIND_RANDOM]
    assert kinds(HEAD + "random.seed(None)\n") == [KIND_RANDOM]
    assert kinds(HEAD + "random.seed(a=None)\n") == [KIND_RANDOM]
    assert kinds("from random import seed\nseed()\n") == [KIND_RANDOM]
    assert kinds(HEAD + "np.random.seed()\np = np.random.uniform(-3, 3, size=3)\n") == [KIND_NUMPY, KIND_NUMPY]
    assert kinds("import numpy\nnumpy.random.seed(None)\n") == [KIND_NUMPY]
    assert kinds("import numpy as np\nnp.random.seed(seed=None)\n") == [KIND_NUMPY]
    assert kinds(HEAD + "g = np.random.default_rng(None)\n") == [KIND_NUMPY]
    assert kinds(HEAD + "g = np.random.default_rng(seed=None)\n") == [KIND_NUMPY]
    assert kinds("from numpy.random import default_rng\ng = default_rng()\n") == [KIND_NUMPY]
    assert kinds(HEAD + "r = np.random.RandomState()\n") == [KIND_NUMPY]
    assert kinds(HEAD + "g = np.random.Generator(np.random.PCG64())\n") == [KIND_NUMPY]
    assert kinds(HEAD + "s = np.random.SeedSequence()\n") == [KIND_NUMPY]
    assert kinds(HEAD + "r = random.Random()\n") == [KIND_RANDOM]
    # with a seed: nothing
    assert kinds(HEAD + "random.seed(3)\nnp.random.seed(0)\nx = random.random() + np.random.rand()\n") == []
    assert kinds(HEAD + "r = random.Random(4)\ng = np.random.Generator(np.random.PCG64(5))\n") == []
    assert kinds(HEAD + "r = np.random.RandomState(seed=1)\ns = np.random.SeedSequence(entropy=9)\n") == []
    # a seedless reseed next to a seeded one is still marked (the order of calls is not modelled)
    assert kinds(HEAD + "np.random.seed(1)\nnp.random.seed()\nv = np.random.rand()\n") == [KIND_NUMPY]
    # unreadable arguments are not claimed
    assert kinds(HEAD + "args = ()\nnp.random.seed(*args)\n") == []


def test_static_marks_on_large_inputs():
    """Every draw of a long script is marked; inputs too deep to parse give none. (That the work grows linearly is
    counted, not timed, in tests/execute/test_analysis_budget.py.)"""
    line = "x = np.random.rand() + random.random()\n"
    assert len(static_marks(HEAD + line * 10000)) == 20000
    assert static_marks("x = " + "(" * 100000 + ")" * 100000) == []  # too deep to parse: no marks, no crash
    assert static_marks("x = a" + ".b" * 100000 + "()") == []  # a long chain: no crash


def test_row_fields():
    from prism_fast.execute.determinism import row_fields

    marks = static_marks(HEAD + "np.random.seed()\n")
    assert row_fields([]) == {"determinism_marks": None, "determinism_sha256": None, "determinism_equal": None}
    assert row_fields(marks)["determinism_marks"] == [{"kind": KIND_NUMPY, "name": "np.random.seed", "line": 4}]
    assert row_fields([], ("a" * 64, "a" * 64))["determinism_equal"] is True
    assert row_fields([], ("a" * 64, "b" * 64)) == {"determinism_marks": None, "determinism_sha256": ["a" * 64, "b" * 64],
                                                     "determinism_equal": False}
    assert row_fields([], ("a" * 64, None))["determinism_equal"] is False
