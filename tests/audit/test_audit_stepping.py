"""audit/stepping.py: plays no intermediate frame can change get one update; the report stays byte-identical to
the every-frame run (real audit children, real manim)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from prism_fast.audit.verdict import report_file

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
from manim import *


class Stepping(Scene):
    def construct(self):
        sq = Square().shift(LEFT * 3)
        self.play(Create(sq), run_time=0.5)                                   # one update
        self.play(sq.animate.shift(RIGHT * 6), run_time=0.5)                  # one update
        c = Circle(radius=0.5)
        self.play(Succession(FadeIn(c), c.animate.move_to(UP * 2)), run_time=0.5)  # alone: one update
        a, b = Dot(LEFT), Dot(RIGHT)
        self.play(LaggedStart(FadeIn(a), FadeIn(b), lag_ratio=0.5), run_time=0.5)  # one update
        self.play(Succession(FadeOut(a), FadeOut(b)), sq.animate.scale(0.5), run_time=0.5)  # beside: every frame
        self.play(c.animate.shift(DOWN), rate_func=lambda t: t * t, run_time=0.5)  # user rate_func: every frame
        tracker = ValueTracker(0)
        number = DecimalNumber(0).to_edge(UP)
        number.add_updater(lambda m: m.set_value(tracker.get_value()))
        self.add(number)
        self.play(tracker.animate.set_value(10), run_time=0.5)              # an updater: every frame
        number.clear_updaters()
        self.play(number.animate.shift(DOWN * 6), run_time=0.5)             # one update (overlaps the square)
        self.wait(0.2)
'''


def _audit(tmp_path: Path, name: str, every_frame: bool) -> dict:
    work = tmp_path / name
    work.mkdir()
    script = work / "stepping.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(ROOT), AUDIT_SAVE_IMAGES="0", TMPDIR=str(tmp_path), HOME=str(work),
               MPLCONFIGDIR=str(work / "mpl"))
    if every_frame:
        env["PRISM_AUDIT_EVERY_FRAME"] = "1"
    proc = subprocess.run([sys.executable, "-m", "prism_fast.audit.child", str(script), "--observations-out",
                           str(work / "obs.json"), "--output-dir", str(work / "out"), "--meta-out",
                           str(work / "meta.json")], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report_file(work / "obs.json", work / "report.json")  # the verdict is the parent's (verdict.py)
    return {"report": (work / "report.json").read_bytes(), "meta": json.loads((work / "meta.json").read_text())}


def test_one_update_per_unobservable_play_same_report(tmp_path):
    stepped = _audit(tmp_path, "stepped", every_frame=False)
    full = _audit(tmp_path, "every_frame", every_frame=True)
    assert stepped["report"] == full["report"]
    report = json.loads(stepped["report"])["Stepping"]
    assert any(seg["out_of_bounds"] or seg["overlaps"] for seg in report.values())  # findings to compare
    assert full["meta"]["stepping"].startswith("every_frame")
    counts = stepped["meta"]["stepping"]
    assert counts["plays"] == 8  # the frozen wait never reaches the frame loop
    assert counts["plays_one_update"] == 5
    assert counts["frames_not_updated"] >= 5 * 20  # 0.5 s at 60 fps: 30 frames, one of them updated
    assert stepped["meta"]["fastcopy"].startswith("on")
