"""Session-scoped real Manim render (-ql) shared by the video tests."""

from __future__ import annotations

import os
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


# A GPU machine without Manim (scripts/device_check.sh) runs these tests on this very scene rendered elsewhere:
# PRISM_TEST_RENDERS names a folder holding DecodeClip.mp4 and the BUNDLED_RENDER_IDS' mp4s (`python -m
# tests.video.conftest FOLDER` renders them there, with the same calls as these fixtures).
PRERENDERED_ENV = "PRISM_TEST_RENDERS"


def _prerendered(names: list[str]) -> dict[str, Path] | None:
    folder = os.environ.get(PRERENDERED_ENV)
    if not folder:
        return None
    out = {name: Path(folder) / f"{name}.mp4" for name in names}
    missing = [str(p) for p in out.values() if not p.is_file()]
    assert not missing, f"{PRERENDERED_ENV}={folder}: missing {missing}"
    return out


def _render_decode_clip(workdir: Path) -> Path:
    return render_scene(SCENE, "DecodeClip", workdir)


# A few of the bundled reference answers, rendered once per session (tests/video/test_video_yuv_decode.py).
BUNDLED_RENDER_IDS = ("SAMPLE-EN-000001", "SAMPLE-ZH-000001")


def _render_bundled(sample_id: str, workdir: Path) -> Path:
    import ast

    from prism_fast.dataset.bundled import SAMPLES_DIR

    lang = sample_id.split("-")[1].lower()
    source = (SAMPLES_DIR / lang / f"{sample_id}.py").read_text(encoding="utf-8")
    scene = next(n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef))
    return render_scene(source, scene, workdir)


@pytest.fixture(scope="session")
def decode_video(tmp_path_factory) -> Path:
    given = _prerendered(["DecodeClip"])
    return given["DecodeClip"] if given else _render_decode_clip(tmp_path_factory.mktemp("decode_render"))


@pytest.fixture(scope="session")
def bundled_renders(tmp_path_factory) -> dict[str, Path]:
    given = _prerendered(list(BUNDLED_RENDER_IDS))
    return given if given else {sample_id: _render_bundled(sample_id, tmp_path_factory.mktemp(f"bundled_{sample_id}"))
                                for sample_id in BUNDLED_RENDER_IDS}


if __name__ == "__main__":   # render the fixtures' videos into a folder, for PRISM_TEST_RENDERS on a machine without Manim
    import shutil
    import tempfile

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("DecodeClip", *BUNDLED_RENDER_IDS):
            (Path(tmp) / name).mkdir()
        shutil.copyfile(_render_decode_clip(Path(tmp) / "DecodeClip"), out / "DecodeClip.mp4")
        for sample_id in BUNDLED_RENDER_IDS:
            shutil.copyfile(_render_bundled(sample_id, Path(tmp) / sample_id), out / f"{sample_id}.mp4")
    print(sorted(p.name for p in out.glob("*.mp4")))
