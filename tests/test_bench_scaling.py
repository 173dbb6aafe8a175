"""bench/scaling.py: argument checks (parts A and B), the executions-per-sample rule and the side-by-side table
(no runs)."""

import os
import subprocess
import sys

import pytest

from bench import scaling


def test_toolkit_path_must_be_a_prism_checkout(tmp_path):
    with pytest.raises(SystemExit) as exc:
        scaling.main(["--skip-a", "--toolkit", str(tmp_path)])
    assert exc.value.code == 2


def test_scripts_must_be_a_directory(tmp_path):
    with pytest.raises(SystemExit) as exc:
        scaling.main(["--skip-a", "--scripts", str(tmp_path / "missing")])
    assert exc.value.code == 2


@pytest.mark.parametrize("order", ["1,3", "2,2", "1,x", ""])
def test_part_a_order_needs_passes_of_one_and_two_workers(order):
    with pytest.raises(SystemExit) as exc:
        scaling.main(["--a-only", "--a-order", order])
    assert exc.value.code == 2


def test_manim_executions_counts_render_and_separate_audit():
    ran = {"scene_class": "S", "success": True}
    assert scaling.manim_executions(ran, {"audit_pass": "shared"}) == 1
    assert scaling.manim_executions(ran, {"audit_pass": "separate"}) == 2
    assert scaling.manim_executions(ran, {"audit_pass": "separate", "audit_cache_hit": True}) == 1
    assert scaling.manim_executions({**ran, "manim_executions": 2}, {"audit_pass": "separate"}) == 3
    assert scaling.manim_executions({**ran, "cache_hit": True}, {"audit_pass": "shared"}) == 0
    assert scaling.manim_executions({"error_kind": "no_script"}, None) is None


def _sides(kind):
    stages = {"render": {"wall_s": 30.0, "cpu_s": 27.0}, "audit": {"wall_s": 300.0, "cpu_s": 290.0},
              "td": {"wall_s": 2.0, "cpu_s": 1.0}}
    base = {"kind": kind, "stages": stages, "wall_s": 332.0, "cpu_s": 318.0, "render_worker_s": 60.0,
            "audit_worker_s": 580.0, "samples": {}}
    ours = {"wall_s": 33.2, "cpu_s": 40.0, "stage_seconds": {"exec": 20.0, "audit": 0.5, "td": 4.0},
            "render_worker_s": 38.0, "render_cpu_s": 30.0, "separate_audit_worker_s": 6.0,
            "manim_executions": {"a": 1, "b": 2, "c": None}, "audit_shared": 1, "audit_separate": 1}
    return base, ours


def test_table_is_side_by_side_with_ratios():
    base, ours = _sides("toolkit")
    text = "\n".join(scaling.format_b(base, ours, 2, 2))
    assert "authors' toolkit, 2 worker(s)" in text
    assert "| **end to end** (ours: the whole command, start-up included) | 332.0 | 318.0 | 33.2 | **10.0x** |" in text
    assert "| audit (ours: Spatial stage) | 300.0 | 290.0 | 0.5 | 600.0x |" in text
    assert "Manim executions per sample: ours 1.50 (1 one-pass shared audits, 1 separate audits, 2 samples)" in text
    assert scaling.RECREATION not in text


def test_recreation_baseline_says_so():
    base, ours = _sides("recreation")
    lines = scaling.format_b(base, ours, 2, 2)
    assert scaling.RECREATION in lines[0]
    assert any(line.startswith("NOTE: the baseline is a SPEC RE-CREATION") for line in lines)


TWICE = '''
from manim import *

class Twice(Scene):
    def construct(self):
        self.play(Create(Square(color=BLUE)).set_run_time(0.4))
        self.play(Square(color=BLUE).animate.shift({shift} * RIGHT), run_time=0.4)
'''


def test_td_difference_is_a_note_only_when_the_videos_differ_and_our_td_reproduces_the_baseline(tmp_path):
    """A script that renders differently each time (unseeded randomness) gives each side its own video: that
    TD_raw difference is a NOTE when our TD call on the baseline's video gives the baseline's TD_raw, else a
    PROBLEM; the same video with another TD_raw is always a PROBLEM."""
    import shutil

    from prism_fast.metrics.td import compute_td_raw
    from tests.video.conftest import render_scene

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    theirs = render_scene(TWICE.format(shift=2), "Twice", (tmp_path / "a").resolve())
    mine = render_scene(TWICE.format(shift=1), "Twice", (tmp_path / "b").resolve())
    td_theirs, td_mine = compute_td_raw(theirs).td_raw, compute_td_raw(mine).td_raw
    assert td_theirs != td_mine

    def run(base_td, our_video):
        base = {"samples": {"s": {"exec_success": True, "spatial_pass": 1, "td_raw": base_td,
                                  "video_path": str(theirs)}}}
        ours = {"rows": {"exec": {"s": {"success": True, "video_path": str(our_video)}},
                         "audit": {"s": {"visual_structure_pass": 1}}, "td": {"s": {"td_raw": td_mine}}}}
        return scaling.compare(base, ours)

    problems, notes = run(td_theirs, mine)
    assert problems == [] and len(notes) == 1 and "different videos" in notes[0]
    problems, notes = run(td_theirs + 1e-9, mine)     # our TD on their video would not give their number
    assert len(problems) == 1 and notes == []
    same = tmp_path / "same.mp4"
    shutil.copyfile(theirs, same)
    problems, notes = run(td_theirs, same)             # identical videos: no excuse
    assert len(problems) == 1 and notes == []
    problems, notes = run(td_mine, mine)               # agreement
    assert problems == [] and notes == []


def test_part_a_pin_confines_a_pass_and_what_it_starts():
    """--a-pin: a pass of N workers runs on the first N allowed cores, every process it starts inherits them,
    and the whole mask is back afterwards (a real child process reports its own affinity)."""
    allowed = sorted(os.sched_getaffinity(0))
    assert scaling.pinned_cores(1, False) is None
    cores = scaling.pinned_cores(1, True)
    assert cores == allowed[:1]
    with scaling.confined_to(cores):
        seen = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert seen == str(cores)
    assert sorted(os.sched_getaffinity(0)) == allowed
    with pytest.raises(ValueError, match="needs"):
        scaling.pinned_cores(len(allowed) + 1, True)


def test_part_a_pin_refuses_a_host_with_too_few_cores():
    if len(os.sched_getaffinity(0)) >= 2:
        with scaling.confined_to(sorted(os.sched_getaffinity(0))[:1]), pytest.raises(SystemExit) as exc:
            scaling.main(["--a-only", "--a-pin"])
    else:
        with pytest.raises(SystemExit) as exc:
            scaling.main(["--a-only", "--a-pin"])
    assert exc.value.code == 2
