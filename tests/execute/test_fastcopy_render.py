"""execute/fastpaths.py ``install_copier``: renders copy glyphs with their parsed SVG path shared.

Direct comparisons in this process (manim's own ``Mobject.__deepcopy__`` against the replacement, node by node:
the same object graph except that a glyph's copy holds its original's ``path_obj``), the original's steps where a
script rebound a name it looks up, and the tripwire (an exception through a copy; a copy near the recursion
limit). Then real renders both ways: videos, rows and error text equal, including a script whose error text
depends on the exact depth at which copying a formula hits the recursion limit, and one whose copy raises.
"""

from __future__ import annotations

import copy
import json
import hashlib
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from prism_fast.audit.fastcopy import may_share_svg_paths
from prism_fast.execute import fastpaths
from tests.audit.test_audit_fastcopy import _mobjects, assert_same_graph
from tests.scratch_names import scratch_neutral


@pytest.fixture()
def copier():
    from manim.mobject.mobject import Mobject

    real = Mobject.__dict__["__deepcopy__"]
    assert fastpaths.install_copier()
    yield real
    fastpaths.uninstall_copier()
    assert Mobject.__dict__["__deepcopy__"] is real


@pytest.fixture(scope="module")
def mobjects(tmp_path_factory):
    from manim import tempconfig

    with tempconfig({"media_dir": str(tmp_path_factory.mktemp("media"))}):
        yield _mobjects()


def test_copies_are_manims_but_for_the_shared_glyph_paths(mobjects, copier):
    from manim.mobject.mobject import Mobject
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    ours = Mobject.__deepcopy__
    glyphs = 0
    for name, mob in mobjects.items():
        Mobject.__deepcopy__ = copier
        try:
            std = copy.deepcopy(mob)
        finally:
            Mobject.__deepcopy__ = ours
        fast = copy.deepcopy(mob)
        assert std.original_id == fast.original_id == str(id(mob))
        assert assert_same_graph(mob, std, fast, shared_svg_paths=True) > 3, name
        glyphs += sum(isinstance(m, VMobjectFromSVGPath) for m in fast.get_family())
    assert glyphs > 20  # (the formulas and texts were compared with their paths shared)


def test_a_rebound_name_or_a_subclass_takes_manims_own_steps(mobjects, copier, monkeypatch):
    from manim import MathTex
    from manim.mobject import mobject as mobject_module
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    tex = mobjects["MathTex"]
    glyph = tex.submobjects[0].submobjects[0]
    assert type(glyph) is VMobjectFromSVGPath
    assert copy.deepcopy(glyph).path_obj is glyph.path_obj
    # a name the original looks up in its module, rebound there: the original runs (and sees it)
    seen = []

    def spy(obj, name, value):
        seen.append(name)
        object.__setattr__(obj, name, value)

    monkeypatch.setitem(vars(mobject_module), "setattr", spy)
    clone = copy.deepcopy(glyph)
    assert "path_obj" in seen and clone.path_obj is not glyph.path_obj
    monkeypatch.delitem(vars(mobject_module), "setattr")

    # `copy.deepcopy` rebound: the original runs, and the rebound function sees every object, the path included
    calls = []
    real_deepcopy = copy.deepcopy

    def counting(x, memo=None):
        calls.append(type(x).__name__)
        return real_deepcopy(x, memo)

    monkeypatch.setattr(copy, "deepcopy", counting)
    clone = glyph.copy()
    monkeypatch.setattr(copy, "deepcopy", real_deepcopy)
    assert clone.path_obj is not glyph.path_obj and "Path" in calls

    # a subclass of the glyph class (a script's): its copy is the standard one
    class Glyph(VMobjectFromSVGPath):
        pass

    own = Glyph.__new__(Glyph)
    own.__dict__.update(vars(glyph))
    assert copy.deepcopy(own).path_obj is not glyph.path_obj
    assert isinstance(MathTex("x").copy(), MathTex)


@pytest.mark.parametrize("which", ["render", "separate_audit"])
def test_the_copiers_run_no_hash_or_comparison_of_the_scripts(mobjects, which):
    """(red team 5) Which objects are glyphs and which attribute is the path is decided without running anything a
    script could define: a metaclass ``__hash__`` of the copied object's class, a ``str`` subclass's ``__eq__`` on
    an instance-dict key. Both counted a copy's steps, which differ from manim's own copier's. The render's copier
    (``fastpaths.install_copier``) and the separate audit's (``audit/fastcopy.py``, sharing)."""
    from abc import ABCMeta

    from manim import Mobject

    from prism_fast.audit import fastcopy

    real = Mobject.__dict__["__deepcopy__"]
    if which == "render":
        assert fastpaths.install_copier()
    else:
        assert fastcopy.install(share_svg_paths=True)
    try:
        _count_script_code_in_copies(mobjects)
    finally:
        if which == "render":
            fastpaths.uninstall_copier()
        Mobject.__deepcopy__ = real
    assert Mobject.__dict__["__deepcopy__"] is real


def _count_script_code_in_copies(mobjects):
    from abc import ABCMeta

    from manim import Mobject

    calls = []

    class Meta(ABCMeta):
        def __hash__(cls):
            calls.append("hash")
            return 12345

    class Probe(Mobject, metaclass=Meta):
        pass

    class Key(str):
        def __eq__(self, other):
            calls.append("eq")
            return False

        def __hash__(self):
            return 5

    probe = Probe()
    before = len(calls)
    probe.copy()
    own = calls[before:]
    glyph = mobjects["MathTex"].submobjects[0].submobjects[0]
    twin = copy.deepcopy(glyph)
    twin.__dict__[Key("tag")] = 1
    before = len(calls)
    twin.copy()
    assert own == ["hash"] and calls[before:] == []  # `Mobject.__init__` hashes the class once, as without us
    assert fastpaths.own_glyph(glyph, fastpaths.manim_glyph_classes()) and \
        not fastpaths.own_glyph(probe, fastpaths.manim_glyph_classes())


def test_an_exception_through_a_copy_trips_the_wire(tmp_path, copier):
    from manim import Square

    marker = tmp_path / fastpaths.MARKER_NAME
    fastpaths._MARKER = str(marker)
    try:
        sq = Square()
        sq.copy()
        assert not marker.exists()
        sq.stream = (i for i in range(3))  # a generator cannot be deep-copied
        with pytest.raises(TypeError):
            sq.copy()
        assert fastpaths.tripped(tmp_path)
    finally:
        fastpaths._MARKER = None


def test_any_other_access_to_a_glyph_path_trips_the_wire(tmp_path, mobjects, copier):
    """The red team's routes to a shared path without naming it: manim's string-driven attribute access
    (``get_merged_array``), ``Mobject.set`` with a computed keyword, a class-level read; manim's own reads and writes
    (building a glyph, copying it) do not trip."""
    from manim import Brace, MathTex, Square
    from manim.mobject.svg.svg_mobject import VMobjectFromSVGPath

    marker = tmp_path / fastpaths.MARKER_NAME
    name = "path" + "_obj"
    try:
        fastpaths._MARKER = str(marker)
        tex = MathTex(r"\frac{a}{b}")
        Brace(Square()).copy()
        tex.copy().copy()
        tex[0][0].generate_points()
        assert not marker.exists()
        for access in (lambda: tex[0][0].get_merged_array(name), lambda: tex[0][0].set(**{name: None}),
                       lambda: getattr(VMobjectFromSVGPath, name)):
            fastpaths._MARKER = str(marker)
            try:
                access()
            except AttributeError:
                pass
            assert fastpaths.tripped(tmp_path)
            marker.unlink()
        # what an instance's access gives is what it gives without the guard
        glyph = MathTex("y")[0][0]
        assert glyph.get_merged_array(name) is vars(glyph)[name]
        # a subclass (manim's set-up lists the class's attributes) is made without tripping
        fastpaths._MARKER = str(marker)
        type("Glyph", (VMobjectFromSVGPath,), {})
        assert not marker.exists()
    finally:
        fastpaths._MARKER = None


def test_readers_of_the_instance_dict_trip_the_wire(tmp_path, mobjects, copier):
    """Red team 3: manim's hashing (a script may turn caching back on) and pickling number objects by identity
    and read the instance dict, past the descriptor; both trip the wire and give what they give without it."""
    from manim.utils.hashing import get_json

    from manim import MathTex, VGroup

    marker = tmp_path / fastpaths.MARKER_NAME
    tex = MathTex("x^2")
    group = VGroup(tex, tex.copy())
    box = np.empty(2, dtype=object)
    box[0], box[1] = tex, tex.copy()
    try:
        for read in (lambda: get_json(group), box.dumps):
            fastpaths._MARKER = str(marker)
            assert read()
            assert fastpaths.tripped(tmp_path)
            marker.unlink()
    finally:
        fastpaths._MARKER = None


def test_the_recursion_trip_counts_c_level_recursion():
    """Python 3.11 counts C-level recursion against the same limit as frames (red team 4: copies inside recursion
    through a script's ``__eq__`` reached the limit at half the frames): the trip measures what is left."""

    class Deep:
        def __init__(self, inner):
            self.inner = inner

        def __eq__(self, other):  # one frame and one C-level comparison per level
            return self.inner == other.inner if isinstance(other.inner, Deep) else probe()

    hits = []

    def probe():
        hits.append(fastpaths.near_recursion_limit())
        return True

    def chain(n):
        d = Deep(None)
        for _ in range(n):
            d = Deep(d)
        return d

    limit = sys.getrecursionlimit()
    deepest = 0
    for n in range(10, limit, 10):  # the deepest chain that compares without RecursionError
        try:
            chain(n) == chain(n)
        except RecursionError:
            break
        deepest = n
    frames_left = limit - deepest  # (each level is one frame: far more than HEADROOM frames remain)
    assert frames_left > 2 * fastpaths.HEADROOM
    hits.clear()
    chain(deepest - fastpaths.HEADROOM // 4) == chain(deepest - fastpaths.HEADROOM // 4)
    assert hits == [True]  # within HEADROOM of the limit by its real budget
    hits.clear()
    chain(10) == chain(10)
    assert hits == [False]


def test_only_a_parsed_path_is_shared(mobjects, copier):
    """A value that is no ``svgelements.Path`` (planted by a script) is copied, not shared."""
    glyph = mobjects["MathTex"].copy()[0][0]
    vars(glyph)["path_obj"] = [1, [2]]
    assert glyph.copy().path_obj is not vars(glyph)["path_obj"]


def test_a_copy_near_the_recursion_limit_trips_the_wire(tmp_path, mobjects, copier):
    marker = tmp_path / fastpaths.MARKER_NAME
    fastpaths._MARKER = str(marker)
    tex = mobjects["MathTex"]
    try:
        tex.copy()
        assert not marker.exists()  # (this test's own stack is far from the limit)

        def deep(n):
            return tex.copy() if n == 0 else deep(n - 1)

        depth = len(_stack())
        deep(sys.getrecursionlimit() - depth - fastpaths.HEADROOM // 2)
        assert fastpaths.tripped(tmp_path)
    finally:
        fastpaths._MARKER = None


def _stack() -> list:
    out, f = [], sys._getframe(1)
    while f is not None:
        out.append(f)
        f = f.f_back
    return out


def test_only_scripts_that_cannot_reach_a_glyph_path_share_it():
    plain = "from manim import *\nclass A(Scene):\n    def construct(self):\n        self.add(MathTex('x').copy())\n"
    assert may_share_svg_paths(plain)
    for bad in ("f = lambda m: m.path_obj", "f = lambda m: getattr(m, 'path' + '_obj')", "f = lambda m: vars(m)",
                "f = lambda m: m.__dict__", "f = eval('1')", "import svgelements", "import copy\nf = copy.deepcopy",
                "from manim.mobject.svg.svg_mobject import se", "import manim.mobject.svg.svg_mobject",
                "print(dir(Brace))", "help(Brace)",
                "class T(MathTex):\n    def path_to_mobject(self, path):\n        return super().path_to_mobject(path)",
                # (red team 5) a glyph moved off its guarded class by a keyword, computed keywords, manim's get_<x>
                # magic, and methods Python calls by itself (`__getattr__` answers copy's `__deepcopy__` lookup
                # with a function that gets the memo; a metaclass `__hash__` or a str key's `__eq__` counts steps)
                "f = lambda m: m.set(__class__=VMobject)", "f = lambda m: m.set(**{'__cl' + 'ass__': VMobject})",
                "f = lambda m: m.get___dict__()",
                "class Spy:\n    def __getattr__(self, name):\n        raise AttributeError(name)",
                "class Meta(type):\n    def __hash__(cls):\n        return 1",
                "class Key(str):\n    def __eq__(self, other):\n        return False"):
        assert not may_share_svg_paths(f"{bad}\n{plain}"), bad
    assert may_share_svg_paths("class Box:\n    def __init__(self):\n        self.n = 1\n" + plain)


# -- real renders ---------------------------------------------------------------------------------------------------

TEXY = textwrap.dedent("""
    from manim import *

    class Texy(Scene):
        def construct(self):
            t = ValueTracker(1.0)
            eq = MathTex(r"\\int_0^1 x^2\\,dx", "=", r"\\frac{1}{3}").to_edge(UP)
            readout = always_redraw(lambda: DecimalNumber(t.get_value(), num_decimal_places=2).next_to(eq, DOWN))
            label = Text("copies ig", font_size=36).to_edge(DOWN)
            self.add(readout, label)
            self.play(Write(eq), run_time=0.4)
            self.play(t.animate.set_value(2.5), TransformMatchingTex(eq.copy(), MathTex("a^2", "=", "b").shift(LEFT)),
                      run_time=0.5)
            self.play(ReplacementTransform(label, Text("done", font_size=36)), run_time=0.3)
""").lstrip()

# a scene that copies one formula at a given recursion depth (`deep(n)`): both scripts below start with it, so the
# depths they find are comparable
_DEEP = """
    from manim import *

    class {name}(Scene):
        def construct(self):
            tex = MathTex(r"\\sum_{{k=1}}^{{n}} k")
            self.add(tex)
            self.wait(0.1)

            def deep(n):
                return tex.copy() if n == 0 else deep(n - 1)
"""

# the error text names the first recursion depth at which copying a formula fails: the standard copy of a glyph's
# path nests deeper than a shared one, so this text tells a shared copy from manim's own
RECURSE = textwrap.dedent(_DEEP.format(name="Recurse") + """
            n = 0
            while True:
                try:
                    deep(n)
                except RecursionError:
                    break
                n += 1
            raise ValueError(f"copying failed at depth {n}")
""").lstrip()

# a copy that raises (an attribute deepcopy cannot copy), uncaught, after a formula was drawn
UNCOPYABLE = textwrap.dedent("""
    from manim import *

    class Uncopyable(Scene):
        def construct(self):
            tex = MathTex("e^{i\\\\pi}+1=0")
            self.play(Write(tex), run_time=0.3)
            tex.stream = (i for i in range(3))
            self.add(tex.copy())
""").lstrip()


# red team 3: manim's own JSON of mobjects numbers objects by identity ("AP" marks one seen before), and pickling
JSONED = textwrap.dedent("""
    from manim import *

    class Jsoned(Scene):
        def construct(self):
            a = MathTex("x^2")
            b = a.copy()
            n = utils.hashing.get_json(VGroup(a, b)).count('"AP"')
            box = np.empty(2, dtype=object)
            box[0], box[1] = a, b
            raise ValueError(f"already-processed markers: {n}, pickle length {len(box.dumps())}")
""").lstrip()

# the red team's: a shared path seen through manim's string-driven getattr (identity decides the video), and a value
# planted with a computed keyword that manim's copy cannot copy
MERGED = textwrap.dedent("""
    from manim import *

    class Merged(Scene):
        def construct(self):
            tex = MathTex("x")
            twin = tex.copy()
            key = "path" + "_obj"
            same = tex[0][0].get_merged_array(key) is twin[0][0].get_merged_array(key)
            self.add(Square() if same else Circle())
            self.wait(0.1)
""").lstrip()

PLANTED = textwrap.dedent("""
    from manim import *

    class Planted(Scene):
        def construct(self):
            tex = MathTex("x")
            tex[0][0].set(**{"path" + "_obj": (i for i in range(3))})
            self.add(tex.copy())
            self.wait(0.1)
""").lstrip()


def _digest(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).exists() else None


@pytest.fixture(scope="module")
def renders(tmp_path_factory):
    from dataclasses import replace

    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    from prism_fast.profile import REFERENCE

    base = tmp_path_factory.mktemp("fastcopy")
    cfg = RenderConfig(timeout_s=120, tmp_root=str(base / "tmp"))
    worker = prefork_worker(cfg)
    out = {}
    try:
        for sid, script in (("texy", TEXY), ("recurse", RECURSE), ("uncopyable", UNCOPYABLE), ("merged", MERGED),
                            ("planted", PLANTED), ("jsoned", JSONED)):
            # (since red team 5 the text rule refuses planted's computed keyword, `dynamic_keywords`, and jsoned's
            # `utils.hashing.get_json`, `getattr_magic:`; rendered with sharing forced, they still check the run-time
            # guard behind that rule)
            assert may_share_svg_paths(script) == (sid not in ("planted", "jsoned")), sid
            for shared in (True, False):
                out[sid, shared] = render_one(sid, script, base / f"{sid}-{shared}",
                                              replace(cfg, fast_paths=shared), REFERENCE, runner=worker.run,
                                              share_svg_paths=shared)
    finally:
        worker.close()
    return out


def _norm(value, sid: str) -> str:
    """A row's text with the sample's scratch dir (a random name, which rich may wrap across lines) aside."""
    return scratch_neutral(str(value), f"render_{sid}_")


def _executions(row) -> int:
    return row.get("manim_executions") or 1  # (render_one counts only where it ran the script again)


COMPARED = ("success", "status", "error", "error_kind", "error_detail", "exit_status", "stdout_bytes",
            "stderr_bytes", "scene_class")


def test_a_render_with_shared_glyph_paths_is_identical(renders):
    fast, plain = renders["texy", True], renders["texy", False]
    assert fast["success"] and fast["fast_paths"] == "on" and plain["fast_paths"] == "off"
    assert _executions(fast) == _executions(plain) == 1
    for key in COMPARED:
        assert fast[key] == plain[key], key
    assert _digest(fast["video_path"]) == _digest(plain["video_path"]) is not None


@pytest.mark.parametrize("sid", ["recurse", "uncopyable", "merged", "planted", "jsoned"])
def test_what_a_shared_copy_could_change_renders_again_without_it(renders, sid):
    fast, plain = renders[sid, True], renders[sid, False]
    assert fast["fast_paths"] == "fallback" and plain["fast_paths"] == "off"
    assert _executions(fast) == 2 and _executions(plain) == 1
    assert fast["success"] == (sid == "merged")
    assert _digest(fast["video_path"]) == _digest(plain["video_path"])
    for key in (*COMPARED, "stderr_tail"):
        assert _norm(fast[key], sid) == _norm(plain[key], sid), key
    assert "execute/fastpaths.py" not in (fast["stderr_tail"] or "")
    if sid == "recurse":
        assert re.search(r"copying failed at depth \d+", plain["stderr_tail"] or "")


# one copy at the first depth where manim's own copy of the formula hits the recursion limit (found by RECURSE's plain
# render): a shared copy needs fewer frames and would succeed there without any exception passing through our frame
AT_DEPTH = textwrap.dedent(_DEEP.format(name="AtDepth") + """
            try:
                deep(DEPTH)
                outcome = "copied"
            except RecursionError:
                outcome = "recursion limit"
            raise ValueError(f"at depth DEPTH: {outcome}")
""").lstrip()


def test_a_copy_that_only_a_shared_path_survives_renders_again_without_it(renders, tmp_path):
    from dataclasses import replace

    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    from prism_fast.profile import REFERENCE

    depth = int(re.search(r"copying failed at depth (\d+)", renders["recurse", False]["stderr_tail"]).group(1))
    script = AT_DEPTH.replace("DEPTH", str(depth))
    assert may_share_svg_paths(script)
    cfg = RenderConfig(timeout_s=120, tmp_root=str(tmp_path / "tmp"))
    worker = prefork_worker(cfg)
    try:
        rows = {shared: render_one("atdepth", script, tmp_path / str(shared), replace(cfg, fast_paths=shared),
                                   REFERENCE, runner=worker.run, share_svg_paths=shared) for shared in (True, False)}
    finally:
        worker.close()
    fast, plain = rows[True], rows[False]
    assert f"at depth {depth}: recursion limit" in plain["stderr_tail"]
    assert fast["fast_paths"] == "fallback" and _executions(fast) == 2
    for key in (*COMPARED, "stderr_tail"):
        assert _norm(fast[key], "atdepth") == _norm(plain[key], "atdepth"), key


def test_a_separate_audit_that_reaches_a_shared_path_runs_again_without_sharing(tmp_path):
    """The separate audit shares glyph paths too (audit/fastcopy.py), only with the fast paths' tripwire and the
    same guard: the red team's identity check through ``get_merged_array`` re-audits the sample without them."""
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_file
    from prism_fast.profile import REFERENCE

    rows = {}
    for sid, script in (("merged", MERGED), ("texy", TEXY)):
        path = tmp_path / f"{sid}.py"
        path.write_text(script, encoding="utf-8")
        for fast in (True, False):
            rows[sid, fast] = audit_file(path, tmp_path / f"w-{fast}", AuditConfig(prefork=True, fast_paths=fast),
                                         REFERENCE)
        reports = [tmp_path / f"w-{f}" / "audits" / sid / "audit_report.json" for f in (True, False)]
        assert reports[0].read_bytes() == reports[1].read_bytes(), sid
    assert rows["merged", True]["fast_paths"] == "fallback"
    assert rows["texy", True]["fast_paths"] == "on"  # (shared paths, nothing reached them)
    meta = json.loads((tmp_path / "w-True" / "audits" / "texy" / "audit_meta.json").read_text(encoding="utf-8"))
    assert meta.get("fastcopy") == "on, svg paths shared", meta


@pytest.mark.parametrize("switch", [False, True])
def test_renders_share_only_with_the_switch_and_an_eligible_script(monkeypatch, tmp_path, switch):
    """``execute.share_glyph_paths`` (default on) and the script's text decide; the decision reaches render_one."""
    from prism_fast.audit import onepass
    from prism_fast.audit.config import AuditConfig
    from prism_fast.execute.render import RenderConfig
    from prism_fast.profile import REFERENCE

    asked = []
    monkeypatch.setattr(onepass, "render_one", lambda *a, **k: asked.append(k.get("share_svg_paths")) or
                        {"success": False, "manim_executions": 0})
    assert RenderConfig().share_glyph_paths is True
    cfg = RenderConfig(share_glyph_paths=switch)
    for script in (TEXY, "import copy\n" + TEXY.replace("eq.copy()", "copy.deepcopy(eq)")):
        onepass.render_with_onepass("s", script, tmp_path, cfg, REFERENCE, None, None, AuditConfig().to_dict())
    assert asked == [switch, False]
