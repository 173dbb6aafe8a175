"""Session-scoped real Manim render (-ql) shared by the video tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCENE = '''
from manim import *

class DecodeClip(Scene):
    def construct(self):
        square = Square(color=BLUE, fill_opacity=0.6)
        label = Text("decode", font="DejaVu Sans").to_edge(UP)
        self.play(Create(square), FadeIn(label), run_time=0.8)
        self.play(square.animate.shift(2 * RIGHT).set_color(YELLOW), run_time=0.6)
        self.wait(0.3)
        self.play(FadeOut(square), run_time=0.4)
'''


def render_scene(source: str, scene: str, workdir: Path) -> Path:
    """Render ``scene`` from ``source`` with ``manim -ql`` in ``workdir``; return the mp4 path."""
    script = workdir / "scene.py"
    script.write_text(source)
    cmd = [sys.executable, "-m", "manim", "-ql", "--disable_caching", "--media_dir", str(workdir / "media"),
           "-o", f"{scene}.mp4", str(script), scene]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=300)
    videos = list((workdir / "media").rglob(f"{scene}.mp4"))
    assert proc.returncode == 0 and videos, f"manim render failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return videos[0]


@pytest.fixture(scope="session")
def decode_video(tmp_path_factory) -> Path:
    return render_scene(SCENE, "DecodeClip", tmp_path_factory.mktemp("decode_render"))


# A few of the bundled reference answers, rendered once per session (tests/video/test_video_yuv_decode.py).
BUNDLED_RENDER_IDS = ("SAMPLE-EN-000001", "SAMPLE-ZH-000001")


@pytest.fixture(scope="session")
def bundled_renders(tmp_path_factory) -> dict[str, Path]:
    import ast

    from prism_fast.dataset.bundled import SAMPLES_DIR

    out = {}
    for sample_id in BUNDLED_RENDER_IDS:
        lang = sample_id.split("-")[1].lower()
        source = (SAMPLES_DIR / lang / f"{sample_id}.py").read_text(encoding="utf-8")
        scene = next(n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
        out[sample_id] = render_scene(source, scene, tmp_path_factory.mktemp(f"bundled_{sample_id}"))
    return out
