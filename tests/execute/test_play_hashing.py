"""execute.play_hashing=false (``--disable_caching``) is a pure speed-up: same video bytes, same outcome.

Manim hashes the whole scene before every play to name its partial movie file; in a fresh media directory
the hash could matter only if a play repeated an earlier one's hash (manim would then reuse that partial
file). That does not happen within one run even for a re-played Wait/animation object (its state, and the
camera's, change once played: checked by hand with manim 0.19.0). These tests render real scripts both ways:
repeated waits and re-played animation objects, a failing script, and bundled reference answers (TeX,
Chinese text).
"""

from __future__ import annotations

import hashlib
import re
import sys
import textwrap
from pathlib import Path

import pytest

from prism_fast.dataset.bundled import SAMPLES_DIR
from prism_fast.execute.render import RenderConfig, manim_command, render_one

MANIM = str(Path(sys.executable).with_name("manim"))

# Identical waits, the same Wait and Indicate objects played twice, an updater (the closest a script gets
# to an in-run hit).
REPEATS = textwrap.dedent("""
    from manim import *

    class Repeats(Scene):
        def construct(self):
            dot = Dot(color=YELLOW)
            sq = Square().shift(RIGHT)
            self.add(dot, sq)
            self.wait(0.4)
            self.wait(0.4)
            w = Wait(0.3)
            self.play(w)
            self.play(w)
            a = Indicate(sq, run_time=0.4)
            self.play(a)
            self.play(a)
            dot.add_updater(lambda m, dt: m.shift(dt * RIGHT))
            self.play(sq.animate.shift(LEFT), run_time=0.4)
            self.wait(0.4)
""").lstrip()

FAILS = textwrap.dedent("""
    from manim import *

    class Fails(Scene):
        def construct(self):
            self.play(Create(Circle()), run_time=0.3)
            self.play(Create(NoSuchMobject()))
""").lstrip()


def _render(tmp_path: Path, sid: str, script: str, play_hashing: bool) -> tuple[dict, str | None]:
    out = tmp_path / ("hashed" if play_hashing else "unhashed")
    cfg = RenderConfig(manim_bin=MANIM, tmp_root=str(tmp_path / "tmp"), timeout_s=300, play_hashing=play_hashing)
    row = render_one(sid, script, out, cfg)
    video = out / "videos" / f"{sid}.mp4"
    digest = hashlib.sha256(video.read_bytes()).hexdigest() if video.exists() else None
    return row, digest


def test_command_line():
    base = manim_command("manim", Path("s.py"), "S", Path("m"), "x")
    assert "--disable_caching" not in base  # default: the authors' command
    assert manim_command("manim", Path("s.py"), "S", Path("m"), "x", play_hashing=False) == [*base, "--disable_caching"]
    assert RenderConfig().play_hashing is False


@pytest.mark.parametrize("sid,script", [("repeats", REPEATS), ("fails", FAILS)])
def test_constructed_scripts_identical_both_ways(tmp_path, sid, script):
    hashed, v_hashed = _render(tmp_path, sid, script, True)
    unhashed, v_unhashed = _render(tmp_path, sid, script, False)
    assert hashed["play_hashing"] is True and unhashed["play_hashing"] is False
    for key in ("success", "status", "error_kind", "exit_status", "timed_out"):
        assert hashed[key] == unhashed[key], key
    # the error text equals up to the sample's random temp-dir suffix (same length, so the same wrapping;
    # rich may wrap the path anywhere, hence the comparison without layout characters)
    assert _flat(hashed["error"], sid) == _flat(unhashed["error"], sid)
    assert len(hashed["error"] or "") == len(unhashed["error"] or "")
    if sid == "repeats":
        assert hashed["success"] is True
        assert v_hashed is not None and v_hashed == v_unhashed
    else:
        assert hashed["success"] is False and "NoSuchMobject" in hashed["error"]


# Exits non-zero without a traceback: the error text is stdout's tail, where --disable_caching adds a
# "Caching disabled." log line per play; the row must come from the authors' command instead.
SILENT_EXIT = textwrap.dedent("""
    import sys
    from manim import *

    class SilentExit(Scene):
        def construct(self):
            self.play(Create(Square()), run_time=0.3)
            self.play(FadeIn(Circle()), run_time=0.3)
            sys.exit(3)
""").lstrip()


def _flat(text: str, sid: str) -> str:
    """Without layout, the temp-dir suffix and rich's log timestamps (which differ run to run anyway)."""
    flat = re.sub(rf"render_{sid}_[a-z0-9_]{{8}}", "TMPDIR", re.sub(r"[\s│]", "", text or ""))
    return re.sub(r"\[\d\d/\d\d/\d{4}:\d\d:\d\d\]", "", flat)


def test_failure_with_error_text_from_stdout_is_rendered_with_hashing(tmp_path):
    sid = "silent"
    hashed, _ = _render(tmp_path, sid, SILENT_EXIT, True)
    fast, _ = _render(tmp_path, sid, SILENT_EXIT, False)
    assert hashed["success"] is False and hashed["exit_status"] == 3 and hashed["stderr_bytes"] == 0
    assert "Caching disabled" not in hashed["error"] and "Partial" in hashed["error"]  # stdout's tail
    assert fast["play_hashing"] is True and fast["manim_executions"] == 2  # re-run with the authors' command
    assert _flat(fast["error"], sid) == _flat(hashed["error"], sid)


@pytest.mark.parametrize("sid", ["SAMPLE-EN-000012", "SAMPLE-ZH-000001"])
def test_bundled_reference_answers_identical_both_ways(tmp_path, sid):
    lang = sid.split("-")[1].lower()
    script = (SAMPLES_DIR / lang / f"{sid}.py").read_text(encoding="utf-8")
    hashed, v_hashed = _render(tmp_path, sid, script, True)
    unhashed, v_unhashed = _render(tmp_path, sid, script, False)
    assert hashed["success"] is True and unhashed["success"] is True
    assert v_hashed == v_unhashed
