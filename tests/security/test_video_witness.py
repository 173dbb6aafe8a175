"""The video witness through the real pipeline (real sandboxed renders, audits, Ray and Parquet): scripts that make
their audited checkpoints differ from what their video shows -- each a Spatial pass without the witness (its audit
report has no finding) -- fail Spatial with ``audit_video_mismatch``; an honest script of the same kinds of
motion is ``ok``. Both audit paths: the render workers' (one-pass or separate right after the render) and the audit
stage's own actors (``audit.one_pass=off``)."""

from __future__ import annotations

import json

import pytest

from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

HONEST = """from manim import *

class Honest(Scene):
    def construct(self):
        title = Text("Witness").to_edge(UP)
        box = Square(fill_opacity=0.4, color=BLUE).shift(LEFT * 3 + DOWN)
        dot = Dot(RIGHT * 2)
        tracker = ValueTracker(0)
        self.play(Write(title), Create(box), FadeIn(dot))
        self.play(box.animate.shift(RIGHT * 2), tracker.animate.set_value(3), rate_func=linear, run_time=1)
        self.play(Rotate(box, PI / 3), rate_func=linear, run_time=0.6)
        self.wait(0.5)
        self.play(FadeOut(dot))
        self.play(box.animate.scale(0.5))
"""

# the failing layout (the square off-screen) is what the video shows for 99.9 % of the last play; the checkpoint
# after it is the clean one
SNAP_BACK = """from manim import *

def hold(t):
    return 0.0 if t < 0.999 else 1.0

class SnapBack(Scene):
    def construct(self):
        s = Square(fill_opacity=1, color=BLUE)
        self.add(s)
        s.shift(RIGHT * 9)
        self.play(s.animate.shift(LEFT * 9), rate_func=hold, run_time=2)
"""

# the camera draws the square somewhere else than its points say
DRAWN_ELSEWHERE = """from manim import *

class Elsewhere(Square):
    def gen_subpaths_from_points_2d(self, points):
        return super().gen_subpaths_from_points_2d(points + np.array([8.5, 0.0, 0.0]))

class Drawn(Scene):
    def construct(self):
        self.play(FadeIn(Elsewhere(fill_opacity=1, color=GREEN)))
        self.wait()
"""

# a clean layout where the run is the audit's (60 fps), the failing one in the render
RECOGNISES_AUDIT = """from manim import *

class Recognises(Scene):
    def construct(self):
        s = Square(fill_opacity=1, color=RED)
        s.move_to(ORIGIN if config.frame_rate > 30 else RIGHT * 8)
        self.play(FadeIn(s))
        self.wait()
"""

# the rendered scene (a function-local class bound to a module name) is not a top-level class: the audit judges the
# clean one, the video shows the other
DECOY = """from manim import *

def build():
    class Overlaps(Scene):
        def construct(self):
            a = Square(fill_opacity=1)
            b = Square(fill_opacity=1, color=RED).shift(RIGHT * 0.5)
            self.play(FadeIn(a), FadeIn(b))
    return Overlaps

Overlaps = build()

class Clean(Scene):
    def construct(self):
        self.play(Create(Circle()))
"""

# the failing layout (red on blue) held to the last frame inside another filled atom's box; a Dot (which the audit
# skips) draws a speck where the clean layout claims the red square
INSIDE_ANOTHER = """from manim import *

def hold(t):
    return 0.0 if t < 0.999 else 1.0

class Stack(Scene):
    def construct(self):
        a = Square(side_length=3, fill_opacity=1, color=BLUE)
        b = Square(side_length=2, fill_opacity=1, color=RED)
        target = Dot(RIGHT * 3.5, color=WHITE)
        self.add(a, b, target)
        self.play(b.animate.move_to(target), rate_func=hold, run_time=2)
"""

# the clean layout only in a skipped last section (the video ends on the overlap); a frame-wide outline and a
# diagonal line whose boxes cover the overlap
SKIPPED_END = """from manim import *

class Skipped(Scene):
    def construct(self):
        border = RoundedRectangle(width=13, height=7.4, corner_radius=0.3, color=GREY)
        guide = Line(LEFT * 6.5 + DOWN * 3.8, RIGHT * 6.5 + UP * 3.8, color=GREY)
        a = Square(side_length=2.5, fill_opacity=1, color=BLUE).shift(LEFT * 1.5)
        b = Circle(radius=1.2, fill_opacity=1, color=RED).shift(RIGHT * 0.3 + UP * 0.4)
        self.add(border, guide)
        self.play(FadeIn(a), FadeIn(b))
        self.wait(1)
        self.next_section(skip_animations=True)
        self.play(b.animate.next_to(a, RIGHT, buff=0.02))
"""

# honest scenes the witness must take as they are: a wait a stop condition ends, waits shorter than a frame, a
# background set as a hex string, thick mitred strokes at sharp corners
HONEST_EDGES = """from manim import *

class Edges(Scene):
    def construct(self):
        self.camera.background_color = "#ece6e2"
        sq = Square(side_length=1, fill_opacity=0.8, color=GREEN).shift(LEFT * 4)
        sq.add_updater(lambda m, dt: m.shift(RIGHT * 2 * dt))
        self.add(sq)
        self.wait_until(lambda: sq.get_x() >= 2, max_time=10)
        sq.clear_updaters()
        star = Star(n=8, outer_radius=1.5, inner_radius=0.6, color=PURPLE, stroke_width=16).shift(LEFT * 3)
        needle = Polygon(UP * 2.5, RIGHT * 0.3, DOWN * 2.5, LEFT * 0.3, color=RED, fill_opacity=0.6,
                         stroke_width=12).shift(RIGHT * 5)
        self.play(Create(star), Create(needle))
        for _ in range(3):
            star.set_fill(opacity=0.2)
            self.wait(0.05)
            star.set_fill(opacity=0.5)
            self.wait(0.05)
        self.wait(0.5)
"""


def _run(tmp_path, scripts: dict, *extra: str):
    from prism_fast.pipeline.run import options_from_config, run_eval

    ds = tmp_path / "ds.jsonl"
    ds.write_text("".join(json.dumps({"id": sid, "language": "en", "instruction": "i", "reference_answer": text}) + "\n"
                          for sid, text in scripts.items()), encoding="utf-8")
    cfg = compose_config(f"dataset.path={ds}", "model=reference", "lang=en", f"runs_root={tmp_path / 'runs'}",
                         "cluster.num_cpus=2", "metrics.padvc.enabled=false", "metrics.text_expand.enabled=false",
                         *extra)
    opts = options_from_config(cfg)
    summary = run_eval(opts)
    store = ResultsStore(opts.run_dir)
    return ({r["id"]: r for r in store.read("exec").to_pylist()},
            {r["id"]: r for r in store.read("audit").to_pylist()}, summary)


def _clean_report(row: dict) -> bool:
    report = json.loads(row["visual_audit_report"]) if isinstance(row["visual_audit_report"], str) else \
        row["visual_audit_report"]
    segments = [seg for scene in report.values() for seg in scene.values()]
    return bool(segments) and not any(seg["out_of_bounds"] or seg["overlaps"] or seg["leaks"] for seg in segments)


@pytest.mark.parametrize("one_pass", ["auto", "off"])
def test_forged_checkpoints_fail_spatial_and_the_honest_script_passes(tmp_path, one_pass):
    scripts = {"PRISM-EN-000001": HONEST, "PRISM-EN-000002": SNAP_BACK, "PRISM-EN-000003": DRAWN_ELSEWHERE,
               "PRISM-EN-000004": RECOGNISES_AUDIT, "PRISM-EN-000005": DECOY, "PRISM-EN-000006": INSIDE_ANOTHER,
               "PRISM-EN-000007": SKIPPED_END, "PRISM-EN-000008": HONEST_EDGES}
    execs, audits, summary = _run(tmp_path, scripts, f"audit.one_pass={one_pass}")
    assert all(execs[sid]["success"] for sid in scripts)

    edges = audits["PRISM-EN-000008"]
    assert edges["video_consistency"] == "ok", edges["video_consistency_detail"]
    honest = audits["PRISM-EN-000001"]
    assert honest["video_consistency"] == "ok", honest["video_consistency_detail"]
    assert honest["visual_structure_pass"] == 1 and honest["error_kind"] is None
    detail = json.loads(honest["video_consistency_detail"])
    assert detail["scene"] == "Honest" and len(detail["segments"]) >= 2
    assert all(seg["drawn"] > 0 and not seg["missing"] for seg in detail["segments"])

    forged = ["PRISM-EN-000002", "PRISM-EN-000003", "PRISM-EN-000006", "PRISM-EN-000007"]
    if one_pass == "off":  # the audit is a run of its own at 60 fps: a script can tell it from the render
        forged += ["PRISM-EN-000004", "PRISM-EN-000005"]
        assert execs["PRISM-EN-000005"]["scene_class"] == "Overlaps"
        decoy = json.loads(audits["PRISM-EN-000005"]["video_consistency_detail"])
        assert (decoy["rendered"], decoy["audited"]) == ("Overlaps", ["Clean"])
    for sid in forged:
        row = audits[sid]
        assert _clean_report(row), (sid, row["visual_audit_report"])  # the audit alone was fooled ...
        assert row["video_consistency"] == "mismatch", (sid, row["video_consistency_detail"])  # ... the video not
        assert (row["visual_structure_pass"], row["audit_success"], row["error_kind"]) == \
            (0, 0, "audit_video_mismatch")
        detail = json.loads(row["video_consistency_detail"])
        assert "rendered" in detail or "unshown" in detail or any(seg["missing"] or seg["unexplained"]
                                                                  for seg in detail["segments"])
    # in the one-pass render the script cannot tell the audit from the render, and the rendered scene is the one
    # audited: these fail Spatial one way or the other
    assert audits["PRISM-EN-000004"]["visual_structure_pass"] == 0
    assert audits["PRISM-EN-000005"]["visual_structure_pass"] == 0
    (group,) = summary["groups"]
    assert group["audit_video_mismatch"] == sum(r["video_consistency"] == "mismatch" for r in audits.values()) >= \
        len(forged)
