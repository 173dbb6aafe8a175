"""The static render-cost estimate that orders renders longest-first (prism_fast/execute/cost.py)."""

from pathlib import Path

import pytest

from prism_fast.execute.cost import BASE, expected_render_cost, longest_first, script_features

HEAD = "from manim import *\n\nclass S(Scene):\n    def construct(self):\n"


def scene(*lines: str) -> str:
    return HEAD + "".join(f"        {line}\n" for line in lines)


def test_literal_durations_and_defaults():
    f = script_features(scene("self.play(Create(Circle()), run_time=3)", "self.wait(2)", "self.wait()",
                              "self.play(FadeOut(Circle()))", "self.wait(duration=0.5)"))
    assert f["seconds"] == pytest.approx(3 + 2 + 1 + 1 + 0.5)


def test_loops_multiply_and_unknown_loops_are_guessed():
    f = script_features(scene("for i in range(2, 12, 2):", "    self.play(FadeIn(Square()), run_time=0.5)"))
    assert f["seconds"] == pytest.approx(5 * 0.5)
    g = script_features(scene("for m in things:", "    self.wait(1)"))
    assert g["seconds"] == pytest.approx(4.0)


def test_tex_text_axes_and_3d_raise_the_cost():
    plain = expected_render_cost(scene("self.play(Create(Circle()))"))
    tex = expected_render_cost(scene("t = MathTex('x^2')", "self.play(Write(t))"))
    axes = expected_render_cost(scene("a = Axes()", "self.play(Create(a))"))
    text = expected_render_cost(scene("t = Text('hi')", "self.play(Write(t))"))
    assert plain < text < tex < axes
    three_d = expected_render_cost(HEAD.replace("(Scene)", "(ThreeDScene)") + "        self.wait(5)\n")
    flat = expected_render_cost(HEAD + "        self.wait(5)\n")
    assert three_d > flat


def test_unparseable_huge_or_missing_scripts_cost_the_base():
    assert expected_render_cost("def (:") == BASE
    assert expected_render_cost(None) == BASE
    assert expected_render_cost("x = 1\n" * 300_000) == BASE   # over the size cap: not parsed at all


def test_deep_nesting_does_not_recurse():
    deep = "x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    assert expected_render_cost(deep) >= BASE
    nested = HEAD + "".join("        " + "    " * i + "for _ in range(2):\n" for i in range(60)) + \
        "        " + "    " * 60 + "self.wait(1)\n"
    assert expected_render_cost(nested) < 1e6   # loop multipliers are capped


def test_longest_first_is_stable_and_complete():
    items = ["a", "bb", "c", "dddd", "ee"]
    out = longest_first(items, len)
    assert out == ["dddd", "bb", "ee", "a", "c"]
    assert sorted(out) == sorted(items)


def test_ranks_the_bundled_samples_like_their_length():
    """A sample with more animated seconds and formulas is expected to cost more than a short plain one."""
    data = Path(__file__).resolve().parents[2] / "prism_fast" / "dataset" / "data" / "samples" / "en"
    scripts = sorted(data.glob("*.py"))
    assert len(scripts) >= 20
    costs = [expected_render_cost(p.read_text(encoding="utf-8")) for p in scripts]
    assert all(c > BASE for c in costs)   # every bundled sample parses and animates
    assert len(set(costs)) > len(costs) // 2   # the estimate separates them
