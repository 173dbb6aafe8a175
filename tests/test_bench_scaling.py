"""bench/scaling.py part B: argument checks, the executions-per-sample rule and the side-by-side table (no runs)."""

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
