"""One Manim execution per sample (audit/onepass*.py): the -ql render yields the audit report where provably
identical, and the decision rule sends every frame-rate / canvas dependent scene to the separate audit.

Real renders (prefork worker) and real audits; one worker and every render shared through a module fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prism_fast.audit import onepass, onepass_store
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_one
from prism_fast.profile import REFERENCE, resolve_profile
from tests.scratch_names import scratch_neutral

FIXTURES = Path(__file__).parent / "fixtures"

PLAIN = '''from manim import *


class Plain(Scene):
    def construct(self):
        title = Text("One pass", font_size=40).to_edge(UP)
        box = Square(side_length=2, fill_opacity=0.5, color=BLUE)
        label = Text("overlapping label", font_size=36).move_to(box.get_right())
        self.play(Write(title), FadeIn(box))
        self.play(box.animate.shift(LEFT * 2).scale(1.2), run_time=0.6)
        self.play(FadeIn(label))
        self.play(FadeOut(title))
        big = Circle(radius=1).shift(RIGHT * 6.8)
        self.play(Create(big), run_time=0.5)
        self.wait(0.3)
'''

# an updater that rotates the square once per frame (60 times a second at the audit's rate, 15 in the render)
# and a Text too long for the -ql Pango canvas; rendered with the observers although the static rule refuses it,
# to show that the runtime guards catch both on their own
DYNAMIC = '''from manim import *


class Spin(Scene):
    def construct(self):
        sq = Square(side_length=1.5)
        self.add(sq)
        sq.add_updater(lambda m: m.rotate(0.2))
        long = Text("a very long caption that runs far past the frame " * 4, font_size=48)
        self.play(FadeIn(long), run_time=0.5)
        self.wait(0.5)
'''

FAILING = '''from manim import *


class Broken(Scene):
    def construct(self):
        dot_label = Text("x")
        self.play(FadeIn(dot_label), run_time=0.2)
        raise ValueError("boom after one play")
'''

# NameError while the module executes (before any scene): the audit's report is {} ("no valid segments")
FAILING_MODULE = '''from manim import *

ACCENT = OLIVE_GREEN


class Broken(Scene):
    def construct(self):
        self.play(FadeIn(Square(color=ACCENT)), run_time=0.2)
'''

# a script Mobject class whose methods override nothing of manim's (only the script calls them): still shared
CUSTOM_CLASS = '''from manim import *


class Badge(VGroup):
    def __init__(self, label, **kwargs):
        super().__init__(**kwargs)
        self.add(Circle(radius=0.6), Text(label, font_size=30))

    def glow(self):
        return self.set_color(YELLOW)


class Badges(Scene):
    def construct(self):
        a = Badge("A").shift(LEFT)
        b = Badge("B").shift(RIGHT * 0.4)
        self.play(FadeIn(a), FadeIn(b))
        a.glow()
        self.play(b.animate.shift(UP * 0.2), run_time=0.3)
'''

# every scene the audit would render is unhooked (Q-SPATIAL-1): the audit-only run's report is {}
UNHOOKED = '''from manim import *


class Solid(ThreeDScene):
    def construct(self):
        self.play(FadeIn(Square(side_length=9)), run_time=0.2)
'''

# camera moves only an unhooked scene may make and still share its render (onepass_rules: unhooked_only): a
# MovingCameraScene is unhooked in the reference audit, so its report is {} whatever the frame does; the label runs
# far off screen, which a hooked scene's report would record
CAMERA_MOVING = '''from manim import *


class Pan(MovingCameraScene):
    def construct(self):
        label = Text("off to the side", font_size=40).shift(RIGHT * 9)
        self.add(Square(side_length=1.5), label)
        self.play(self.camera.frame.animate.move_to(label).scale(1.4), run_time=0.6)
        self.play(FadeIn(Dot(self.camera.frame_center)), run_time=0.3)
'''

# the same camera reads in a hooked Scene (plain Camera has a frame_center too): audited separately
CAMERA_HOOKED = '''from manim import *


class Still(Scene):
    def construct(self):
        label = Text("off to the side", font_size=40).shift(RIGHT * 9)
        self.play(FadeIn(label), FadeIn(Dot(self.camera.frame_center)), run_time=0.3)
'''


# raises inside the play's per-frame loop (the rate function, at the frames past 30 % of the play): the audit steps
# the play at other times, so the render's failure is not the audit's: rendered again, audited separately
FAILING_FRAME = '''from manim import *


def steep(t):
    if t > 0.3:
        raise ArithmeticError("past the knee")
    return t


class Broken(Scene):
    def construct(self):
        sq = Square()
        self.play(FadeIn(sq), run_time=0.2)
        self.play(sq.animate.shift(RIGHT), rate_func=steep, run_time=1)
'''


# Registered after the one-pass observer's exit handler, so it runs first (atexit is LIFO): writes a "clean" side
# file under the observer's name in its working directory (the scratch) and leaves before the real one is written.
FORGER = '''from manim import *
import atexit, json, os


class S(Scene):
    def construct(self):
        self.add(Square())
        self.wait(0.2)


def forge():
    name = ".prism" + "_fast_" + "one" + "pass.json"
    doc = {"reasons": [], "audited_scenes": ["S"], "report": {"S": {"forged": True}}, "audit_sec": 0.0}
    with open(name, "w") as fh:
        json.dump(doc, fh)
    os._exit(0)


atexit.register(forge)
'''


# A failing layout (overlap) whose script reaches the one-pass observer's module without a dunder or a flagged name
# (manim's module_ops imports inspect), steals the result's seal, leaves a sealed "clean" report and sends the
# trusted writer elsewhere. The static rule must refuse it (module hop), so it never shares its render.
REFLECTS = '''from manim import *
import manim.utils.module_ops as mo


class Overlap(Scene):
    def construct(self):
        a = Square(side_length=3, fill_opacity=0.8, color=BLUE)
        b = Square(side_length=3, fill_opacity=0.8, color=RED).shift(RIGHT * 0.5)
        self.play(FadeIn(a), FadeIn(b))
        self.wait(0.2)


members = dict(mo.inspect.getmembers(mo.inspect.getmodule(mo.get_module)))
st = members.get("_STATE")
if st is not None:
    doc = {"reasons": [], "audited_scenes": ["Overlap"], "audit_sec": 0.0, "engine": None,
           "report": {"Overlap": {"Segment_0": {"out_of_bounds": [], "overlaps": [], "leaks": []}}}}
    members["write_result"]({"out_file": st.req["side_file"], "seal": st.req["seal"]}, doc)
    st.req["side_file"] = st.req["side_file"] + ".elsewhere"
'''


# The same forgery hidden in the `if __name__ == "__main__":` branch the static rule skips as never run: a class
# named `__name__` whose metaclass equals anything makes the test true in both executions.
MAIN_REBOUND = '''from manim import *


class Overlap(Scene):
    def construct(self):
        a = Square(side_length=3, fill_opacity=0.8, color=BLUE)
        b = Square(side_length=3, fill_opacity=0.8, color=RED).shift(RIGHT * 0.5)
        self.play(FadeIn(a), FadeIn(b))
        self.wait(0.2)


class Always(type):
    def __eq__(cls, other):
        return True


class __name__(metaclass=Always):
    pass


if __name__ == "__main__":
    __name__ = Overlap.__module__
    g = getattr(Scene.play, "__globals__")
    if "_STATE" in g:
        real = g["write_result"]

        def clean(ctx, doc):
            for scene in (doc.get("report") or {}).values():
                for seg in scene.values():
                    seg["overlaps"] = []
            doc["reasons"] = []
            real(ctx, doc)

        g["write_result"] = clean
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    from prism_fast.audit.onepass import render_with_onepass

    base = tmp_path_factory.mktemp("onepass")
    cfg = RenderConfig()
    acfg = AuditConfig().to_dict()
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)  # (test_textboxes.py renders one pass without)
    out = {}
    try:
        for name, script in (("plain", PLAIN), ("failing", FAILING), ("failing_module", FAILING_MODULE),
                             ("unhooked", UNHOOKED), ("custom_class", CUSTOM_CLASS), ("reflects", REFLECTS),
                             ("main_rebound", MAIN_REBOUND), ("camera_moving", CAMERA_MOVING),
                             ("camera_hooked", CAMERA_HOOKED),
                             ("traced", (FIXTURES / "traced.py").read_text(encoding="utf-8"))):
            out[name] = render_with_onepass(f"S-{name}", script, base / "onepass", cfg, REFERENCE, None, worker.run,
                                            acfg)
        # past the static rule: the observers themselves must refuse this one (the render's observer extension
        # point, execute/observers.py, driven directly)
        watch = onepass.observer(acfg)
        out["dynamic"] = render_one("S-dynamic", DYNAMIC, base / "onepass", cfg, runner=worker.run,
                                    observers=(watch,))
        out["dynamic_doc"] = watch.result
        # a script that forges the side file and ends before the child half's exit handler can write it
        forge = onepass.observer(acfg)
        out["forged"] = render_one("S-forged", FORGER, base / "onepass", cfg, runner=worker.run, observers=(forge,))
        out["forged_watch"] = forge
        out["plain_ref"] = render_one("S-plain", PLAIN, base / "plain", cfg, runner=worker.run)
        for name, script in (("failing", FAILING), ("failing_module", FAILING_MODULE),
                             ("camera_moving", CAMERA_MOVING)):
            out[f"{name}_ref"] = render_one(f"S-{name}", script, base / "plain", cfg, runner=worker.run)
        # a failure inside a play leaves manim's movie writer waiting: the render ends at its timeout (short here)
        short = RenderConfig(timeout_s=12)
        out["failing_frame"] = render_with_onepass("S-failing_frame", FAILING_FRAME, base / "onepass", short,
                                                   REFERENCE, None, worker.run, acfg)
        out["failing_frame_ref"] = render_one("S-failing_frame", FAILING_FRAME, base / "plain", short,
                                              runner=worker.run)
    finally:
        worker.close()
    out["base"] = base
    out["plain_audit"] = audit_one("S-plain", PLAIN, base / "audit_only", AuditConfig())
    for name, script in (("failing", FAILING), ("failing_module", FAILING_MODULE), ("unhooked", UNHOOKED),
                         ("custom_class", CUSTOM_CLASS), ("camera_moving", CAMERA_MOVING),
                         ("camera_hooked", CAMERA_HOOKED)):
        out[f"{name}_audit"] = audit_one(f"S-{name}", script, base / "audit_only", AuditConfig())
    out["main_rebound_audit"] = audit_one("S-main", MAIN_REBOUND, base / "audit_only", AuditConfig())
    out["reflects_audit"] = audit_one("S-reflects", REFLECTS, base / "audit_only", AuditConfig())
    out["traced_audit"] = audit_one("traced", (FIXTURES / "traced.py").read_text(encoding="utf-8"),
                                    base / "audit_only", AuditConfig())
    return out


@pytest.mark.slow
def test_plain_scene_shares_the_render_and_matches_the_audit_only_report(runs):
    row = dict(runs["plain"])
    shared = row.pop("_onepass_audit")
    assert row["success"] and row["onepass"] == "shared" and row["onepass_reasons"] == []
    assert row["manim_executions"] == 1
    # the video is byte-identical to a render without any audit observer
    ref = runs["plain_ref"]
    assert Path(row["video_path"]).read_bytes() == Path(ref["video_path"]).read_bytes()
    # and so is everything the render printed (paths of the two output dirs aside)
    norm = lambda r: (r["stderr_tail"] or "").replace(str(runs["base"] / "onepass"), "@").replace(
        str(runs["base"] / "plain"), "@")
    assert norm(row) == norm(ref) and row["stdout_bytes"] == ref["stdout_bytes"]
    # the report is byte-identical to the audit-only run's, and not trivial
    only = runs["plain_audit"]
    only_text = Path(runs["base"] / "audit_only" / "audits" / "S-plain" / "audit_report.json").read_text(
        encoding="utf-8")
    assert onepass_store.report_text(shared["report"]) == only_text
    assert only["segment_count"] == 2 and only["visual_issue_total"] > 0
    # the stored audit row equals the audit-only row in every field of the authors' row
    work = runs["base"] / "pipeline_audit"
    acfg = AuditConfig().to_dict()
    onepass_store.store_shared_audit("S-plain", PLAIN, shared, work, acfg)
    loaded = onepass.load_shared_audit("S-plain", PLAIN, work, {**acfg, "one_pass": "auto"})
    assert loaded["audit_pass"] == "shared"
    for key in ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass",
                "visual_issue_total", "visual_issue_breakdown", "error_msg", "visual_audit_report", "status"):
        assert loaded[key] == only[key], key
    assert onepass.load_shared_audit("S-plain", PLAIN + "\n# edited\n", work, acfg) is None  # keyed by the script
    assert onepass.load_shared_audit("S-plain", PLAIN, work, {**acfg, "cover_min": 0.2}) is None  # and settings


@pytest.mark.slow
def test_traced_path_scene_takes_the_separate_audit_and_matches_the_reference(runs):
    row = runs["traced"]
    assert row["success"] and row["onepass"] == "ineligible" and "_onepass_audit" not in row
    assert "name:TracedPath" in row["onepass_reasons"] and "attr:add_updater" in row["onepass_reasons"]
    report = Path(runs["base"] / "audit_only" / "audits" / "traced" / "audit_report.json").read_text(
        encoding="utf-8")
    assert json.loads(report) == json.loads((FIXTURES / "expected_traced.json").read_text(encoding="utf-8"))
    assert runs["traced_audit"]["audit_success"] == 1


@pytest.mark.slow
def test_runtime_guards_catch_an_updater_and_a_canvas_dependent_text(runs):
    row = runs["dynamic"]
    assert "attr:add_updater" in onepass.static_reasons(DYNAMIC)
    assert row["success"], row["error"]
    reasons = runs["dynamic_doc"]["reasons"]
    assert "mobject_updater" in reasons and "text_depends_on_canvas" in reasons
    # the plain scene's observers found nothing
    assert runs["plain"]["onepass_reasons"] == []


@pytest.mark.slow
def test_script_reaching_the_observer_by_reflection_never_shares_its_render(runs):
    row = runs["reflects"]
    assert row["success"], row["error"]
    assert row["onepass"] == "ineligible" and "_onepass_audit" not in row
    assert "module_attr:inspect" in row["onepass_reasons"]
    # the separate audit (what the sample gets) fails the overlap the forged report would have hidden
    assert runs["reflects_audit"]["visual_structure_pass"] == 0
    assert runs["reflects_audit"]["visual_issue_breakdown"]["overlaps"] == 1


@pytest.mark.slow
def test_script_rebinding_name_gets_no_unchecked_main_branch(runs):
    row = runs["main_rebound"]
    assert row["success"], row["error"]
    assert row["onepass"] == "ineligible" and "_onepass_audit" not in row
    assert "binds:__name__" in row["onepass_reasons"]
    assert runs["main_rebound_audit"]["visual_issue_breakdown"]["overlaps"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["failing", "failing_module"])
def test_failed_one_pass_render_is_its_only_execution_when_the_audit_meets_the_same_error(runs, name):
    """A render that fails where the audit fails too (after a play; while the module executes) is kept: its row
    (error text included) is the plain render's, and its salvaged report and audit row are the audit-only run's."""
    row, ref, only = dict(runs[name]), runs[f"{name}_ref"], runs[f"{name}_audit"]
    shared = row.pop("_onepass_audit")
    assert row["onepass"] == "shared" and row["manim_executions"] == 1 and not row["success"]
    assert "hooks.py" not in row["error"] and "onepass" not in row["error"]  # no observer frame printed
    strip = lambda v: scratch_neutral(v, f"render_S-{name}_")
    timing = {"runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "written_at_ns", "onepass", "onepass_reasons",
              "manim_executions"}
    assert {k: strip(v) for k, v in ref.items() if k not in timing} == \
        {k: strip(v) for k, v in row.items() if k not in timing}
    text = Path(runs["base"] / "audit_only" / "audits" / f"S-{name}" / "audit_report.json").read_text(
        encoding="utf-8")
    assert onepass_store.report_text(shared["report"]) == text
    work = runs["base"] / "pipeline_audit"
    got = onepass_store.write_shared_audit(f"S-{name}", "x.py", shared, work)
    for key in ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass",
                "visual_issue_total", "visual_issue_breakdown", "error_msg", "visual_audit_report", "status",
                "error_kind", "error_detail", "scene_errors"):
        assert got[key] == only[key], key
    if name == "failing":  # salvaged: the snapshot of its one play, a success with the error recorded
        assert only["audit_success"] == 1 and only["error_detail"].startswith("salvaged after: ValueError")
    else:  # nothing to salvage
        assert only["audit_success"] == 0 and only["scene_errors"][0]["where"] == "runtime"


@pytest.mark.slow
def test_a_script_mobject_class_with_methods_manim_never_calls_still_shares(runs):
    row = dict(runs["custom_class"])
    shared = row.pop("_onepass_audit", None)
    assert row["success"] and row["onepass"] == "shared", row["onepass_reasons"]
    text = Path(runs["base"] / "audit_only" / "audits" / "S-custom_class" / "audit_report.json").read_text(
        encoding="utf-8")
    assert onepass_store.report_text(shared["report"]) == text and runs["custom_class_audit"]["segment_count"] >= 1


def _shares_the_audit_only_empty_report(runs, name: str) -> dict:
    """The one-pass row of ``name`` shares ``{}``, byte-identical to the audit-only run's report, and the stored audit
    row equals the audit-only row; returns the audit-only row."""
    row, only = dict(runs[name]), runs[f"{name}_audit"]
    shared = row.pop("_onepass_audit")
    assert row["success"] and row["onepass"] == "shared" and row["manim_executions"] == 1
    assert shared["report"] == {}
    text = Path(runs["base"] / "audit_only" / "audits" / f"S-{name}" / "audit_report.json").read_text(
        encoding="utf-8")
    assert onepass_store.report_text(shared["report"]) == text  # the audit-only run hooks nothing either
    got = onepass_store.write_shared_audit(f"S-{name}", "x.py", shared, runs["base"] / "pipeline_audit")
    for key in ("audit_success", "segment_count", "error_msg", "status", "error_kind", "scene_errors"):
        assert got[key] == only[key], key
    return only


@pytest.mark.slow
def test_a_script_whose_scenes_are_all_unhooked_shares_the_audits_empty_report(runs):
    only = _shares_the_audit_only_empty_report(runs, "unhooked")
    assert only["audit_success"] == 0  # "Audit produced no valid segments", in both


@pytest.mark.slow
def test_camera_moves_of_an_unhooked_scene_share_the_render_and_a_hooked_scene_is_audited_separately(runs):
    _shares_the_audit_only_empty_report(runs, "camera_moving")
    # the render is the plain render: same video bytes
    row, ref = runs["camera_moving"], runs["camera_moving_ref"]
    assert Path(row["video_path"]).read_bytes() == Path(ref["video_path"]).read_bytes()

    hooked, hooked_only = runs["camera_hooked"], runs["camera_hooked_audit"]
    assert hooked["success"] and hooked["onepass"] == "separate" and "_onepass_audit" not in hooked
    assert hooked["onepass_reasons"][0] == "unhooked_only:camera.frame_center"
    assert hooked_only["segment_count"] == 1 and hooked_only["visual_issue_total"] > 0  # what sharing {} would hide


@pytest.mark.slow
def test_failed_one_pass_render_in_the_per_frame_loop_keeps_its_row_and_is_audited_separately(runs):
    """Raised in the play's per-frame loop: the audit steps that play at other times, so the failure is not
    shared; but the printed error is the plain render's (the observers' frames unlinked), so the render is not
    repeated. manim's movie writer then waits forever: both renders end at the timeout, with the same text."""
    row, ref = runs["failing_frame"], runs["failing_frame_ref"]
    assert row["timed_out"] and ref["timed_out"] and not row["success"]
    assert row["onepass"] == "separate" and row["manim_executions"] == 1 and "_onepass_audit" not in row
    # (its rate_func is script code, which the per-frame loop runs: also a reason of its own)
    assert row["onepass_reasons"] == ["render_failed", "script_callable:rate_func",
                                      "failure:render_only:update_to_time"]
    assert "ArithmeticError: past the knee" in row["stderr_tail"] and "hooks.py" not in row["stderr_tail"]
    strip = lambda v: scratch_neutral(v, "render_S-failing_frame_")
    timing = {"runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "written_at_ns", "onepass", "onepass_reasons",
              "manim_executions"}
    assert {k: strip(v) for k, v in ref.items() if k not in timing} == \
        {k: strip(v) for k, v in row.items() if k not in timing}


def test_static_rule():
    assert onepass.static_reasons(PLAIN) == []
    assert sorted(onepass.static_reasons(CAMERA_MOVING)) == ["unhooked_only:camera.frame",
                                                             "unhooked_only:camera.frame_center"]
    for other in ("self.camera.pixel_width", "self.camera.frame_rate", "self.renderer.camera.frame", "cam.camera.frame"):
        got = onepass.static_reasons(f"from manim import *\nclass S(MovingCameraScene):\n    def construct(self):\n"
                                     f"        x = {other}\n")
        assert "attr:camera" in got and not any(r.startswith("unhooked_only:") for r in got), (other, got)
    cases = {
        "self.remove(a).add(b)": "remove_result_used",
        "x = self.remove(a)": "remove_result_used",
        "try:\n    a = 1\nexcept TypeError:\n    pass": "try",
        "import os": "import:os",
        "from . import helper": "relative_import",
        "p = __file__": "name:__file__",
        "c = CENTER": "name:CENTER",
        "config.frame_rate = 30": "name:config",
        "t = self.renderer.time": "attr:renderer",
        "d = always_redraw(lambda: Text(str(t.get_value())))": "name:always_redraw",
        "m.add_updater(f)": "attr:add_updater",
        "self.wait_until(lambda: True)": "attr:wait_until",
        "n = mob.name": "attr:name",
        "v = getattr(m, 'x')": "name:getattr",
        # reflection without a dunder: module hops, frames, attribute access by string, evaluated annotations
        "import manim.utils.module_ops as mo\nm = mo.inspect.getmodule(mo.get_module)": "module_attr:inspect",
        "from manim.mobject.mobject import inspect": "module_attr:inspect",
        "p = np.lib.os.getcwd()": "module_attr:os",
        "g = (i for i in r)\nf = g.gi_frame.f_back": "attr:gi_frame",
        "import operator\ng = operator.attrgetter('_' * 2 + 'globals' + '_' * 2)(Scene.play)": "string_access:attrgetter",
        "from operator import methodcaller as mc": "string_access:methodcaller",
        "s = '{0.play.x}'.format(Scene)": "string_access:format_field",
        "s = '{0[k]}'.format(d)": "string_access:format_field",
        "s = template.format(Scene)": "string_access:format",
        "s = string.Formatter().get_field('0.x', [Scene], {})": "string_access:Formatter",
        "def f(x: 'mo.inspect'):\n    pass": "string_annotation",
        "h = typing.get_type_hints(f)": "string_access:get_type_hints",
        "import enum\ng = enum.bltns.getattr(Scene.play, 'x')": "attr:bltns",  # enum's alias of builtins
        "p = manim.utils.file_ops.sp.Popen(['true'])": "attr:sp",
        # typing evaluates forward references: an eval of any string with builtins
        "import typing\nv = typing._eval_type(typing.Optional['(lambda: 42)()'], {}, {})": "private:typing._eval_type",
        "import typing as t\nr = t.get_args(t.Optional['x'])[0]._evaluate({}, {}, frozenset())": "attr:_evaluate",
        "from typing import _eval_type": "private:typing",
        # red team: functools copies attributes named by strings (a library function's code rewritten in place, a
        # module's globals copied into the script's), a dunder as a keyword or a string for setattr-like calls,
        # numpy's error hooks (a script callback at every frame that under- or overflows) and raw memory views
        "import functools\nfunctools.update_wrapper(Square.get_family, f, assigned=a, updated=())":
            "string_access:update_wrapper",
        "from functools import wraps\nwraps(Mobject.shift)(Mobject.become)": "string_access:wraps",
        "Mobject.set(Square.get_family, __defaults__=(b,))": "keyword:__defaults__",
        "Mobject.set(Square.get_family, **{'__defaults__': (b,)})": "string:dunder",
        "a = ('__code__',)": "string:dunder",
        "np.seterrcall(f)\nnp.seterr(all='call')": "library_state:seterrcall",
        "with np.errstate(under='raise'):\n    pass": "library_state:errstate",
        "from numpy import seterr": "library_state:seterr",
        "with np.testing.suppress_warnings() as s:\n    log = s.record(RuntimeWarning)": "library_state:suppress_warnings",
        "v = np.lib.stride_tricks.as_strided(a, (9,), (8,))": "library_state:as_strided",
        "from numpy.lib.stride_tricks import as_strided": "library_state:as_strided",
        "import copy\ncopy.dispatch_table[ManimColor] = f": "library_state:dispatch_table",
        # setattr by a computed name: manim's Mobject.set unbound, copy's protocol on a script class
        "Mobject.set(np, **{'_' * 2 + 'class' + '_' * 2: M})": "unbound_set",
        "s = type(sq).set": "unbound_set",
        "class A:\n    def __reduce__(self):\n        return (f, (np,), (None, d))": "copy_protocol:__reduce__",
        # red team 4: the call stack without a frame attribute -- logging's caller lookup (manim's `logger`), a
        # record's stack, rich's caller-frame locals -- and a library object's internals by a private name
        "s = logger.findCaller(True)[3]": "frame_info:findCaller",
        "logger.info('x', stack_info=True)": "frame_info:stack_info",
        "logger.warning('x', stacklevel=4)": "frame_info:stacklevel",
        "m = console._caller_frame_info(1)[2]['memo']": "private:._caller_frame_info",
        "k = tex._tex_string": "private:._tex_string",
        "class C:\n    _v = 1\nv = C()._v": "private:._v",
        # (a script's own private name too: `self` is only a name, `H.leak(logger)` runs logger._log)
        "class H:\n    def _log(self):\n        pass\n    def leak(self):\n        return self._log(30)": "private:._log",
        "from manim import _config": "private:manim",
        "console.log('', _stack_offset=3)": "private:_stack_offset=",
        # manim's Mobject.__getattr__: m.get_<x>() is getattr(m, "<x>"), m.set_<x>(v) setattr (review)
        "g = Probe().get__caller_frame_info()": "getattr_magic:get__caller_frame_info",
        "d = m.get___dict__()": "getattr_magic:get___dict__",
        "m.set___class__(A)": "getattr_magic:set___class__",
        "s = Spy().get_findCaller()(True)": "frame_info:findCaller",
        # keywords the rule cannot read: a computed mapping, a key it refuses, a forwarded mapping that is changed
        "d = {'stack' + '_info': True}\nlogger.info('x', **d)": "dynamic_keywords",
        "logger.warning('x', **{'stack_info': True})": "frame_info:stack_info",
        "def f(**kw):\n    kw['stack_' + 'info'] = 1\n    logger.info('x', **kw)": "dynamic_keywords",
    }
    for code, reason in cases.items():
        assert reason in onepass.static_reasons(code), code
    assert onepass.static_reasons("def f(:\n") == ["syntax_error"]
    assert onepass.static_reasons("self.remove(a)\nitems.remove(3)") == []
    # ordinary forms stay eligible: numpy arrays, literal templates without field access, real annotations
    assert onepass.static_reasons("a = np.array([1, 2])\ns = '{:.2f} {}'.format(x, y)\n"
                                  "def f(x: int) -> list:\n    return [x]") == []
    assert onepass.static_reasons("sq.set(color=RED)\nself.set(x=1)\nVGroup(a, b).set(color=RED)") == []
    # a wrapper forwarding its own **kwargs unchanged, and literal keywords, stay eligible
    assert onepass.static_reasons("class Card(VGroup):\n    def __init__(self, n, **kwargs):\n"
                                  "        super().__init__(**kwargs)\n"
                                  "def label(t, **kw):\n    return Text(t, **kw)\n"
                                  "x = Text('a', **{'font_size': 30})") == []


def test_plan_reasons_switch_profile_backend_and_images():
    acfg = AuditConfig().to_dict()
    assert onepass.plan_reasons(PLAIN, acfg, REFERENCE, "prefork") == []
    assert "one_pass:off" in onepass.plan_reasons(PLAIN, {**acfg, "one_pass": "off"}, REFERENCE, "prefork")
    assert "backend:cli" in onepass.plan_reasons(PLAIN, acfg, REFERENCE, "cli")
    assert "audit_images" in onepass.plan_reasons(PLAIN, {**acfg, "full_fidelity": True}, REFERENCE, "prefork")
    improved = resolve_profile("improved", {})
    assert "profile:improved" in onepass.plan_reasons(PLAIN, acfg, improved, "prefork")


def test_default_is_auto():
    assert AuditConfig().one_pass == "auto"


def test_side_file_round_trip(tmp_path):
    from prism_fast.execute.observers import collect_results, out_file, write_result

    watch = onepass.observer(AuditConfig().to_dict())
    path = out_file(tmp_path, watch)
    assert path.name == ".prism_fast_onepass.json"  # the name the tamper rule's strings cover
    collect_results([watch], tmp_path)
    assert watch.result is None
    path.write_text("not json", encoding="utf-8")
    collect_results([watch], tmp_path)
    assert watch.result is None
    path.write_text(json.dumps(["not", "an", "object"]), encoding="utf-8")
    collect_results([watch], tmp_path)
    assert watch.result is None
    # a plain JSON object (what a script could write): not sealed, never taken
    path.write_text(json.dumps({"reasons": [], "report": {"A": {}}}), encoding="utf-8")
    collect_results([watch], tmp_path)
    assert watch.result is None and watch.rejected == "unsealed"
    # sealed under another render's key: refused
    write_result({"out_file": str(path), "seal": onepass.observer({}).seal}, {"reasons": [], "report": {"A": {}}})
    collect_results([watch], tmp_path)
    assert watch.result is None and watch.rejected == "seal_mismatch"
    # sealed under this render's key (what the child half does): taken
    write_result({"out_file": str(path), "seal": watch.seal}, {"reasons": [], "report": {"A": {}}})
    collect_results([watch], tmp_path)
    assert watch.result["report"] == {"A": {}} and watch.rejected is None


def test_summary_counts_manim_executions_per_sample():
    from prism_fast.pipeline.summary import _manim_executions

    ok = {"success": True, "scene_class": "A", "cache_hit": False, "skipped": False}
    assert _manim_executions({**ok, "manim_executions": 1}, {"audit_pass": "shared"}) == 1
    assert _manim_executions({**ok, "manim_executions": 1}, {"audit_pass": "separate"}) == 2
    assert _manim_executions({**ok, "manim_executions": 2}, {"audit_pass": "separate"}) == 3  # fallback
    assert _manim_executions({**ok, "manim_executions": 0, "cache_hit": True},
                             {"audit_pass": "separate", "audit_cache_hit": True}) == 0
    assert _manim_executions(ok, {"audit_pass": "separate"}) == 2  # a row from before one-pass existed
    assert _manim_executions({"error_kind": "no_script"}, {"error_kind": "no_script"}) is None


def test_static_rule_flags_repr_forms_and_module_internals():
    """Review findings: manim's VMobject.__repr__ prints the injected variable names, so any repr of a mobject
    (f"{g!r}", "%r" %, "{!r}".format) makes the render depend on the audit's injection; module internals such
    as typing.sys reach os/sys from an allowed import."""
    head = "import typing\nfrom manim import *\nclass A(Scene):\n    def construct(self):\n        g = VGroup()\n"
    cases = {'Text(f"{g!r}")': "repr_conversion", 'Text("%r" % (g,))': "repr_format",
             'Text("{!r}".format(g))': "repr_format", "typing.sys.modules": "attr:sys"}
    for line, reason in cases.items():
        assert reason in onepass.static_reasons(head + "        " + line + "\n"), line
    assert onepass.static_reasons(head + '        self.play(Create(Square()))\n') == []


@pytest.mark.slow
def test_a_forged_side_file_is_never_taken(runs):
    """The script wrote a well-formed side file and skipped the observer's own writer: the render succeeded, the
    file is there, and the parent refuses it (no seal), so the sample would take the separate audit."""
    row, watch = runs["forged"], runs["forged_watch"]
    assert row["success"], row.get("stderr_tail")
    assert watch.result is None
    assert watch.rejected == "unsealed"


def test_static_rule_leaves_no_module_route_to_an_evaluator_importer_or_frames():
    """Walk every module reachable from the allowed imports (manim, numpy, the short list) through attribute names
    the static rule accepts: none hands out builtins/os/sys/inspect/gc/importlib/subprocess/ctypes/... or one of
    their evaluators, importers, frame getters, process starters or ``open``. A new manim/numpy/scipy version that
    opens such a route fails here (add the name to onepass_rule.REACH_ATTRS)."""
    import builtins
    import gc
    import importlib
    import inspect
    import subprocess
    import sys
    import types

    import manim
    import numpy

    from prism_fast.audit import onepass_rule

    danger_modules = {"builtins", "os", "posix", "sys", "inspect", "gc", "importlib", "subprocess", "ctypes", "types",
                      "io", "pathlib", "shutil", "atexit", "signal", "threading", "_thread", "code", "codeop", "runpy",
                      "pickle", "marshal", "socket", "pdb", "traceback", "linecache", "tempfile", "weakref"}
    danger = {id(f) for f in (builtins.eval, builtins.exec, builtins.getattr, builtins.setattr, builtins.vars,
                              builtins.globals, builtins.open, builtins.compile, builtins.__import__, sys._getframe,
                              importlib.import_module, importlib.reload, inspect.currentframe, gc.get_objects,
                              gc.get_referrers, subprocess.Popen)}
    roots = [manim, numpy] + [importlib.import_module(m) for m in sorted(onepass_rule.SAFE_IMPORTS - {"__future__"})]
    accepted: dict[str, bool] = {}

    def accepts(name: str) -> bool:
        if name not in accepted:
            accepted[name] = not name.startswith("__") and onepass_rule.static_reasons(f"x.{name}") == []
        return accepted[name]

    seen = {id(m) for m in roots}
    queue = [(m, m.__name__) for m in roots]
    leaks = []
    while queue:
        module, path = queue.pop()
        for name, value in list(vars(module).items()):
            if not accepts(name):
                continue
            if id(value) in danger:
                leaks.append(f"{path}.{name}")
            elif isinstance(value, types.ModuleType):
                if value.__name__.split(".")[0] in danger_modules:
                    leaks.append(f"{path}.{name} -> {value.__name__}")
                elif id(value) not in seen:
                    seen.add(id(value))
                    queue.append((value, f"{path}.{name}"))
    assert len(seen) > 100  # the walk really went through manim's and numpy's modules
    assert leaks == []
