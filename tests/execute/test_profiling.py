import numpy as np
import pytest

from prism_fast.execute.profiling import ProfileSettings, describe, percentile, profile_renders
from prism_fast.execute.render import RenderConfig

TINY = """from manim import *
class Tiny(Scene):
    def construct(self):
        self.play(FadeIn(Square()), run_time=0.2)
"""
BROKEN = TINY.replace("Square()", "Square(nonsense_kw=1)")


@pytest.mark.parametrize("q", [0, 10, 50, 95, 100])
def test_percentile_matches_numpy(q):
    xs = [3.0, 1.0, 7.5, 2.25, 9.0, 4.0]
    assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-12)
    assert describe(xs)["median"] == float(np.median(xs))


def test_profile_counts_repeats_pins_and_failures(tmp_path):
    cfg = RenderConfig(timeout_s=120, cache_dir=str(tmp_path / "cache"), tmp_root=str(tmp_path / "tmp"))
    seen: list[bool] = []
    result = profile_renders([("m", "TINY-1", TINY), ("m", "BROKEN-1", BROKEN)], cfg,
                             ProfileSettings(repeats=2, warmup=1, pin_cpu=0), on_render=seen.append)
    assert seen == [False] * 3 + [True] * 3  # every render reported (the command's progress), warm-ups included
    tiny, broken = result["samples"]
    assert tiny["wall_s"]["n"] == 2 and tiny["failures"] == 0
    assert tiny["wall_s"]["mean"] > 0 and tiny["cpu_s"]["mean"] > 0
    assert tiny["wall_s"]["p95"] >= tiny["wall_s"]["median"]
    assert broken["wall_s"]["n"] == 0 and broken["failures"] == 2 and "nonsense_kw" in broken["last_error"]
    assert result["models"]["m"]["samples"] == 1
    assert result["method"]["render_cache"] == "off" and result["method"]["pin_cpu"] == 0
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
