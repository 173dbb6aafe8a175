"""execute/fastpaths.py: manim's three helpers replaced by exact fast paths.

Direct comparisons (this process, manim's own originals against the replacements): the Cairo path built for many
mobjects and for adversarial point sets (anchors on either side of the equality tolerance by one ulp, remainders,
a single point, non-finite, huge and tiny values, float32 and 2-column points, the 3-D camera's projection), the
subpaths and the boundary anchors (values, dtype, shape, the exception where the original raises), and the
fallbacks (a script's subclass, instance or class override, a property). Then real renders and audits both ways:
video bytes, text boxes, error text, one-pass and separate audit reports; and a script whose exception passes
through a fast path: rendered and audited again without them, the rows equal to the plain ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import cairo
import numpy as np
import pytest

from prism_fast.execute import fastpaths
from tests.scratch_names import scratch_neutral


@pytest.fixture()
def fast():
    """The fast paths installed in this process for one test, manim's originals put back after it."""
    fastpaths.install()
    yield fastpaths._ORIG
    fastpaths.uninstall()


def _path_of(fn, camera, vm):
    surface = cairo.ImageSurface(cairo.FORMAT_ARGB32, 32, 32)
    ctx = cairo.Context(surface)
    try:
        ret = fn(camera, ctx, vm)
    except Exception as exc:  # noqa: BLE001 - compared below
        return ("raised", type(exc).__name__, str(exc))
    return (ret is camera, ret is None, [(kind, tuple(pts)) for kind, pts in ctx.copy_path()])


def _same_arrays(a, b) -> bool:
    return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _mobjects():
    from manim import (Arc, Axes, Circle, DashedLine, Dot, Line, NumberPlane, Polygon, Square, Star, Text,
                       VGroup, VMobject)

    out = [Circle(), Square(), Dot(), Line(), Arc(angle=5), Star(), Polygon([0, 0, 0], [1, 0, 0], [0, 1, 0]),
           DashedLine(), Text("Hi, gap ab ig"), Axes().plot(np.sin), NumberPlane(), VGroup(Circle(), Square())]
    rng = np.random.default_rng(7)
    tol = VMobject().tolerance_for_point_equality
    for n in (0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 33, 64):
        pts = rng.normal(size=(n, 3)) * 3
        for k in range(4, n, 4):  # join most curves, some exactly, some on the tolerance's edge
            choice = rng.integers(6)
            if choice == 0:
                pts[k] = pts[k - 1]
            elif choice == 1:
                pts[k] = pts[k - 1] + tol
            elif choice == 2:  # one ulp either side of atol + rtol * |b|
                b = pts[k - 1, :2]
                lim = tol + 1e-5 * np.abs(b)
                pts[k, :2] = np.nextafter(b + lim * rng.choice([-1, 1]), rng.choice([-np.inf, np.inf]))
            elif choice in (3, 4):  # a difference exactly equal to the limit (b = 0: the limit is atol)
                pts[k - 1] = pts[k] = 0.0
                pts[k - 1, choice - 3] = tol * rng.choice([-1, 1])
        vm = VMobject()
        vm.points = pts
        out.append(vm)
    odd = []
    for pts in (np.array([[np.nan, 0, 0]] * 8), np.array([[np.inf, 1, 0]] * 4 + [[0, 0, 0]] * 4),
                np.full((8, 3), 1e200), np.full((8, 3), 1e-300), rng.normal(size=(8, 3)).astype(np.float32),
                rng.normal(size=(8, 2)), np.zeros((8, 3)), np.zeros((0, 3))):
        vm = VMobject()
        vm.points = pts
        odd.append(vm)
    return out + odd


def test_cairo_paths_are_the_originals(fast):
    from manim.camera.camera import Camera
    from manim.camera.three_d_camera import ThreeDCamera

    for camera in (Camera(), ThreeDCamera()):
        for vm in _mobjects():
            for sm in vm.family_members_with_points() or [vm]:
                want = _path_of(fast["set_cairo_context_path"], camera, sm)
                assert _path_of(Camera.set_cairo_context_path, camera, sm) == want, (type(sm).__name__, sm.points)


def test_subpaths_and_boundary_are_the_originals(fast):
    from manim import VMobject

    for vm in _mobjects():
        for sm in vm.get_family():
            want = fast["get_subpaths_from_points"](sm, sm.points)
            got = VMobject.get_subpaths_from_points(sm, sm.points)
            assert len(got) == len(want) and all(_same_arrays(g, w) for g, w in zip(got, want))
        want = _outcome(fast["get_points_defining_boundary"], vm)
        got = _outcome(VMobject.get_points_defining_boundary, vm)
        assert got[:2] == want[:2] and (want[0] == "raised" or _same_arrays(got[2], want[2])), type(vm).__name__
        want = _outcome(_critical_point, vm, fast["get_points_defining_boundary"])
        got = _outcome(VMobject.get_critical_point, vm, np.array([1, -1, 0]))
        assert got[:2] == want[:2] and (want[0] == "raised" or _same_arrays(got[2], want[2])), type(vm).__name__


def _outcome(fn, *args):
    try:
        return ("ok", None, fn(*args))
    except Exception as exc:  # noqa: BLE001 - compared by the caller
        return ("raised", (type(exc), str(exc)), None)


def _critical_point(vm, boundary):
    pts = boundary(vm)
    out = np.zeros(3)
    if len(pts):
        for dim, key in enumerate((1, -1, 0)):
            out[dim] = vm.get_extremum_along_dim(pts, dim=dim, key=key)
    return out


def test_mixed_families_and_scripts_overrides_take_the_original(fast):
    from manim import Circle, Mobject, Square, VGroup, VMobject
    from manim.camera.camera import Camera

    # a family the original refuses: the same exception
    group = VGroup(Circle())
    group.submobjects.append(Mobject())
    with pytest.raises(AttributeError) as orig_exc:
        fast["get_points_defining_boundary"](group)
    with pytest.raises(AttributeError) as fast_exc:
        group.get_points_defining_boundary()
    assert str(orig_exc.value) == str(fast_exc.value)
    flat = Square()
    flat.points = flat.points[:, :2].copy()
    mixed = VGroup(Circle(), flat)
    with pytest.raises(ValueError):
        mixed.get_points_defining_boundary()

    calls = []

    class Never(VMobject):  # every curve its own subpath, and it counts
        def consider_points_equals_2d(self, p0, p1):
            calls.append(1)
            return False

    class Counted(VMobject):
        reads = 0

        @property
        def tolerance_for_point_equality(self):
            Counted.reads += 1
            return 1e-6

        @tolerance_for_point_equality.setter
        def tolerance_for_point_equality(self, value):
            pass

    camera = Camera()
    for cls in (Never, Counted):
        vm = cls()
        vm.points = Circle().points
        calls.clear()
        Counted.reads = 0
        want = _path_of(fast["set_cairo_context_path"], camera, vm)
        want_counts = (len(calls), Counted.reads)
        calls.clear()
        Counted.reads = 0
        assert _path_of(Camera.set_cairo_context_path, camera, vm) == want
        assert (len(calls), Counted.reads) == want_counts and sum(want_counts) > 0

    vm = Circle()
    vm.consider_points_equals = lambda p0, p1: False  # an instance override
    assert len(vm.get_subpaths()) == len(fast["get_subpaths_from_points"](vm, vm.points)) == vm.get_num_curves() > 1
    saved = VMobject.consider_points_equals_2d
    try:  # a script's patch of the class itself
        VMobject.consider_points_equals_2d = lambda self, p0, p1: False
        vm = Circle()
        assert _path_of(Camera.set_cairo_context_path, camera, vm) == \
            _path_of(fast["set_cairo_context_path"], camera, vm)
    finally:
        VMobject.consider_points_equals_2d = saved


def test_what_a_script_can_rebind_takes_the_original(fast):
    """Review findings: a float curve size, numpy's and the builtins' names rebound, a camera hook of a subclass,
    a context that is not Cairo's, a family member that is not plain -- each behaves as manim's original."""
    import builtins

    from manim import Circle, Square, VGroup, VMobject
    from manim.camera.camera import Camera

    camera = Camera()
    sq = Square()
    sq.n_points_per_cubic_curve = 4.0  # the original's range() refuses it
    assert _path_of(Camera.set_cairo_context_path, camera, sq) == _path_of(fast["set_cairo_context_path"], camera, sq)
    assert _path_of(Camera.set_cairo_context_path, camera, sq)[0] == "raised"
    assert _outcome(VMobject.get_subpaths_from_points, sq, sq.points)[:2] == \
        _outcome(fast["get_subpaths_from_points"], sq, sq.points)[:2]

    two = VMobject()
    two.points = np.concatenate([Square().points, Square().points + 0.5])
    saved_allclose, saved_abs = np.allclose, builtins.abs
    try:
        np.allclose = lambda *a, **k: True
        assert [len(p) for p in two.get_subpaths()] == [len(p) for p in fast["get_subpaths_from_points"](two, two.points)]
        np.allclose = saved_allclose
        builtins.abs = lambda x: 0 * x
        assert _path_of(Camera.set_cairo_context_path, camera, two) == \
            _path_of(fast["set_cairo_context_path"], camera, two)
    finally:
        np.allclose, builtins.abs = saved_allclose, saved_abs

    class Hooked(Camera):  # a point hook that changes the curve size: the original fails to unpack
        def transform_points_pre_display(self, mobject, points):
            mobject.n_points_per_cubic_curve = 3
            return points

    assert _path_of(Camera.set_cairo_context_path, Hooked(), Circle()) == \
        _path_of(fast["set_cairo_context_path"], Hooked(), Circle())

    class Recorder:  # not a cairo.Context: every call, and the type of every argument
        def __init__(self):
            self.log = []

        def __getattr__(self, name):
            self.log.append(name)
            return lambda *args: self.log.append((name, tuple(type(a).__name__ for a in args)))

    logs = []
    for fn in (fast["set_cairo_context_path"], Camera.set_cairo_context_path):
        rec = Recorder()
        fn(camera, rec, Circle())
        logs.append(rec.log)
    assert logs[0] == logs[1] and len(logs[0]) > 10

    calls = []

    class Counted(VGroup):  # get_family is called once by the original, even where a member is not plain
        def get_family(self, recurse=True):
            calls.append(1)
            return super().get_family(recurse)

    flat = Circle()
    flat.points = flat.points.astype(np.float32)
    group = Counted(Square(), flat)
    want = fast["get_points_defining_boundary"](group)
    n_orig = len(calls)
    got = group.get_points_defining_boundary()
    assert _same_arrays(got, want) and len(calls) == 2 * n_orig == 2


def test_floating_point_errors_stay_the_originals(fast):
    """With ``np.seterr(all="raise")`` the original raises at its own place; the fast path must not raise
    earlier, later or elsewhere (it leaves such values to the original)."""
    from manim import VMobject
    from manim.camera.camera import Camera

    vm = VMobject()
    vm.points = np.array([[1e308, 0, 0]] * 4 + [[-1e308, 0, 0]] * 4)
    camera = Camera()
    with np.errstate(all="raise"):
        want = _path_of(fast["set_cairo_context_path"], camera, vm)
        assert _path_of(Camera.set_cairo_context_path, camera, vm) == want
        with pytest.raises(FloatingPointError) as orig_exc:
            fast["get_subpaths_from_points"](vm, vm.points)
        with pytest.raises(FloatingPointError) as fast_exc:
            vm.get_subpaths()
        assert str(orig_exc.value) == str(fast_exc.value)


def test_an_exception_through_a_fast_path_trips_the_wire(tmp_path, fast):
    from manim import Circle, Mobject, VGroup

    marker = tmp_path / fastpaths.MARKER_NAME
    fastpaths.install(str(marker))
    Circle().get_critical_point(np.array([1, 0, 0]))
    assert not fastpaths.tripped(tmp_path)
    group = VGroup(Circle())
    group.submobjects.append(Mobject())
    with pytest.raises(AttributeError):
        group.get_critical_point(np.array([1, 0, 0]))
    assert fastpaths.tripped(tmp_path)


# ---- real renders and audits, both ways ------------------------------------------------------------------

SHAPES = textwrap.dedent("""
    from manim import *

    class Shapes(Scene):
        def construct(self):
            t = ValueTracker(0.5)
            label = Text("gap ig 42", font_size=40).to_edge(UP)
            readout = always_redraw(lambda: DecimalNumber(t.get_value(), num_decimal_places=2).next_to(label, DOWN))
            axes = Axes(x_range=[-3, 3], y_range=[-2, 2], x_length=6, y_length=3)
            graph = always_redraw(lambda: axes.plot(lambda x: t.get_value() * np.sin(x), color=BLUE))
            self.add(label, readout, axes, graph)
            self.play(t.animate.set_value(1.5), run_time=0.6)
            sq = Square().shift(3 * LEFT)
            self.play(Transform(sq, Star().shift(3 * RIGHT)), Create(DashedLine(LEFT, RIGHT)), run_time=0.5)
            self.play(FadeOut(axes), label.animate.next_to(sq, DOWN), run_time=0.4)
            self.wait(0.2)
""").lstrip()

SPACE = textwrap.dedent("""
    from manim import *

    class Space(ThreeDScene):
        def construct(self):
            self.set_camera_orientation(phi=70 * DEGREES, theta=30 * DEGREES)
            cube = Cube(side_length=1.5, fill_opacity=0.6)
            self.add(ThreeDAxes(), cube)
            self.play(Rotate(cube, PI / 3), run_time=0.5)
            self.move_camera(theta=60 * DEGREES, run_time=0.5)
""").lstrip()

# uncaught, through VMobject.get_points_defining_boundary (a family the original refuses), between two plays
RAISES = textwrap.dedent("""
    from manim import *

    class Raises(Scene):
        def construct(self):
            self.play(FadeIn(Circle()), run_time=0.3)
            g = VGroup(Square())
            g.submobjects.append(Mobject())
            self.add(g.get_center())
""").lstrip()

# caught by the script, which prints the traceback and goes on: a success whose output names the frames
CAUGHT = textwrap.dedent("""
    import traceback
    from manim import *

    class Caught(Scene):
        def construct(self):
            g = VGroup(Circle())
            g.submobjects.append(Mobject())
            try:
                g.get_critical_point(UP)
            except AttributeError:
                traceback.print_exc()
            self.play(Create(Square()), run_time=0.3)
""").lstrip()

# (red team 5) as CAUGHT, but the script deletes the tripwire file after the trip and draws what the traceback
# showed: with the file as the only sign, the run that showed a frame of ours was kept (fast_paths=on, "ours")
UNLINKS = textwrap.dedent("""
    import os
    import traceback
    from manim import *

    class Unlinks(Scene):
        def construct(self):
            g = VGroup(Circle())
            g.submobjects.append(Mobject())
            seen = "none"
            try:
                g.get_critical_point(UP)
            except AttributeError:
                seen = "ours" if "fastpaths" in traceback.format_exc() else "manim"
                for name in os.listdir("."):
                    if name.endswith("_tripped"):
                        os.remove(name)
            self.add(Text(seen).to_edge(DOWN))
            self.play(Create(Square()), run_time=0.3)
""").lstrip()


# reads the call stack from inside a fast path (a script override reached from get_points_defining_boundary): a
# text that says whether a frame of ours was there (red team 4: manim's logger.findCaller(True) gives the stack)
STACK = textwrap.dedent("""
    from manim import *

    seen = []

    class Part(Square):
        def get_family(self, recurse=True):
            seen.append("fastpaths" in (logger.findCaller(True)[3] or ""))
            return super().get_family(recurse)

    class Stack(Scene):
        def construct(self):
            group = VGroup(Part(), Circle())
            group.get_top()
            self.add(group, Text("ours" if any(seen) else "manim").to_edge(DOWN))
            self.wait(0.2)
""").lstrip()


def _digest(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).exists() else None


@pytest.fixture(scope="module")
def renders(tmp_path_factory):
    from prism_fast.audit import onepass
    from prism_fast.audit.config import AuditConfig
    from prism_fast.execute.render import RenderConfig, prefork_worker
    from prism_fast.profile import REFERENCE

    base = tmp_path_factory.mktemp("fastpaths")
    cfg = RenderConfig(timeout_s=90, tmp_root=str(base / "tmp"))
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    out = {}
    try:
        for sid, script in (("shapes", SHAPES), ("space", SPACE), ("raises", RAISES), ("caught", CAUGHT),
                            ("stack", STACK), ("unlinks", UNLINKS)):
            for fast in (True, False):
                row = onepass.render_with_onepass(sid, script, base / f"{sid}-{fast}",
                                                  replace(cfg, fast_paths=fast), REFERENCE, None, worker.run,
                                                  AuditConfig().to_dict())
                out[sid, fast] = row
    finally:
        worker.close()
    return out


def _boxes(video) -> dict:
    """The text-box sidecar without its timing (``stats.record_sec``)."""
    from prism_fast.execute.textboxes import sidecar_path

    doc = json.loads(sidecar_path(video).read_text(encoding="utf-8"))
    doc.get("stats", {}).pop("record_sec", None)
    return doc


COMPARED = ("success", "status", "error", "error_kind", "error_detail", "exit_status", "stdout_bytes",
            "stderr_bytes", "scene_class", "onepass", "onepass_reasons")


@pytest.mark.parametrize("sid", ["shapes", "space"])
def test_renders_are_identical_both_ways(renders, sid):
    fast, plain = renders[sid, True], renders[sid, False]
    assert fast["fast_paths"] == "on" and plain["fast_paths"] == "off"
    assert fast["success"] and fast["manim_executions"] == plain["manim_executions"] == 1
    for key in COMPARED:
        assert fast[key] == plain[key], key
    assert _digest(fast["video_path"]) == _digest(plain["video_path"]) is not None
    assert _boxes(fast["video_path"]) == _boxes(plain["video_path"]) and _boxes(fast["video_path"])["frames"]
    if fast["onepass"] == "shared":
        assert json.dumps(fast["_onepass_audit"]["report"], sort_keys=True) == \
            json.dumps(plain["_onepass_audit"]["report"], sort_keys=True)


@pytest.mark.parametrize("sid", ["raises", "caught", "unlinks"])
def test_an_exception_through_a_fast_path_renders_again_without_them(renders, sid):
    fast, plain = renders[sid, True], renders[sid, False]
    assert fast["fast_paths"] == "fallback" and plain["fast_paths"] == "off"
    assert fast["manim_executions"] == plain["manim_executions"] + 1, (fast["onepass"], fast["onepass_reasons"])
    for key in COMPARED:
        assert fast[key] == plain[key], key
    # the sample's scratch dir (a random name) aside
    tails = [scratch_neutral(row["stderr_tail"], f"render_{sid}_") for row in (fast, plain)]
    assert tails[0] == tails[1]
    assert _digest(fast["video_path"]) == _digest(plain["video_path"])
    assert "execute/fastpaths.py" not in (fast["stderr_tail"] or "")
    assert (sid in ("caught", "unlinks")) == bool(fast["success"])


def test_a_script_that_reads_the_call_stack_renders_without_them(renders):
    from prism_fast.execute.fastpaths import reads_call_stack

    fast, plain = renders["stack", True], renders["stack", False]
    assert reads_call_stack(STACK) and not reads_call_stack(SHAPES)
    # behind manim's get_ prefix (Mobject.__getattr__), as a ** key, under a coding declaration Python decodes
    assert reads_call_stack("s = Spy().get_findCaller()(True)")
    assert reads_call_stack("logger.warning('x', **{'stack_info': True})")
    assert reads_call_stack("# coding: utf-7\ns = logger.find+AEM-aller(True)")
    assert fast["fast_paths"] == "declined" and plain["fast_paths"] == "off"
    assert fast["success"] and fast["manim_executions"] == plain["manim_executions"] == 1
    for key in COMPARED:
        assert fast[key] == plain[key], key
    assert "frame_info:findCaller" in fast["onepass_reasons"] and fast["onepass"] == "ineligible"
    assert _digest(fast["video_path"]) == _digest(plain["video_path"]) is not None


_PROGRESS = re.compile(r"\d+/\d+ \[[\d:<?]+, *[\d.?]+ *(?:it/s|s/it)\]")


def _stable(text: str) -> list[str]:
    """Lines without manim's progress bars (they carry timings)."""
    return [line for line in re.split(r"[\r\n]", text) if line.strip() and not _PROGRESS.search(line)]


def test_separate_audits_are_identical_both_ways(tmp_path, caplog):
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_file
    from prism_fast.profile import REFERENCE

    rows = {}
    for sid, script in (("shapes", SHAPES), ("caught", CAUGHT), ("unlinks", UNLINKS)):
        path = tmp_path / f"{sid}.py"
        path.write_text(script, encoding="utf-8")
        for fast in (True, False):
            rows[sid, fast] = audit_file(path, tmp_path / f"w-{fast}", AuditConfig(prefork=True, fast_paths=fast),
                                         REFERENCE)
    assert rows["shapes", True]["fast_paths"] == "on" and rows["shapes", False]["fast_paths"] == "off"
    assert rows["caught", True]["fast_paths"] == rows["unlinks", True]["fast_paths"] == "fallback"
    for sid in ("shapes", "caught", "unlinks"):
        fast, plain = rows[sid, True], rows[sid, False]
        for key in ("audit_success", "segment_count", "visual_structure_pass", "visual_issue_total", "error_msg",
                    "visual_audit_report", "status", "error_kind", "returncode", "scene_errors"):
            assert fast[key] == plain[key], (sid, key)
        reports = [tmp_path / f"w-{f}" / "audits" / sid / "audit_report.json" for f in (True, False)]
        assert reports[0].read_bytes() == reports[1].read_bytes()
        logs = [(tmp_path / f"w-{f}" / "audits" / sid / "audit.log").read_text(encoding="utf-8") for f in (True, False)]
        logs = [_stable(scratch_neutral(text, f"audit_{sid}_")) for text in logs]
        assert logs[0] == logs[1]
        assert "execute/fastpaths.py" not in logs[0]
    assert rows["shapes", True]["segment_count"] >= 2
    path = tmp_path / "stack.py"
    path.write_text(STACK, encoding="utf-8")
    with caplog.at_level("WARNING", logger="prism_fast.audit.runner"):
        stack = audit_file(path, tmp_path / "w-stack", AuditConfig(prefork=True, fast_paths=True), REFERENCE)
    assert stack["fast_paths"] == "declined" and stack["audit_success"]
    assert any("reads the call stack" in r.getMessage() for r in caplog.records)  # never silent


def test_the_script_never_sees_the_request(tmp_path):
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    script = textwrap.dedent("""
        import os
        from manim import *

        class Env(Scene):
            def construct(self):
                if any("FAST" in k or "TRIPPED" in v.upper() for k, v in os.environ.items()):
                    raise SystemExit(3)
                self.add(Circle())
                self.wait(0.1)
    """).lstrip()
    cfg = RenderConfig(timeout_s=120, tmp_root=str(tmp_path / "tmp"))
    worker = prefork_worker(cfg)
    try:
        row = render_one("env", script, tmp_path / "out", cfg, runner=worker.run)
    finally:
        worker.close()
    assert row["fast_paths"] == "on" and row["success"], row["error"]
