"""Exec success needs a real video (execute/videocheck.py).

Real renders whose scripts damage their own output after manim wrote it (an ``atexit`` handler finds the final
mp4 under ``media/videos/`` in its cwd, where the render's ``--media_dir`` puts it), and real files the check
reads (manim's own output, damaged copies, clips PyAV encodes in another format). No mocks of manim or PyAV.
"""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import av
import numpy as np
import pytest

from prism_fast.execute import videocheck
from prism_fast.execute.cache import RenderCache
from prism_fast.execute.render import ERR_INVALID_VIDEO, RenderConfig, render_one
from prism_fast.execute.textboxes import sidecar_path
from prism_fast.profile import REFERENCE

MANIM = str(Path(sys.executable).with_name("manim"))
QL = videocheck.expected_format("-ql")

SCENE = textwrap.dedent("""
    from manim import *

    class Short(Scene):
        def construct(self):
            self.play(Create(Square()), run_time=0.4)
            self.wait(0.6)
""").lstrip()
SCENE_FRAMES = 15  # 0.4 s + 0.6 s at 15 fps

# Registered when the script is imported, so it runs after manim's main() wrote and combined the final mp4.
SPOIL = textwrap.dedent("""
    import atexit, glob, os, shutil

    def _final():
        return [p for p in glob.glob("media/videos/**/*.mp4", recursive=True) if "partial_movie_files" not in p]

    def _spoil():
        for path in _final():
            {action}

    atexit.register(_spoil)
""")
RANDOM_BYTES = "open(path, 'wb').write(os.urandom(4096))"
TRUNCATE = "os.truncate(path, os.path.getsize(path) // 2)"
# a real clip of the right format, but not the frames this render wrote: the first play's partial movie file
SWAP = ("shutil.copyfile(sorted(glob.glob('media/videos/**/partial_movie_files/**/*.mp4', recursive=True))[0], "
        "path)")


def spoiling(action: str) -> str:
    return SCENE + SPOIL.format(action=action)


def cli_cfg(tmp_path: Path, **kw) -> RenderConfig:
    return RenderConfig(manim_bin=MANIM, timeout_s=120, tmp_root=str(tmp_path / "tmp"), **kw)


def assert_invalid(row: dict, out: Path, detail_start: str) -> None:
    assert row["success"] is False and row["status"] == "failed" and row["error_kind"] == "invalid_video", row
    assert row["exit_status"] == 0 and row["video_check"] == "invalid" and row["video_path"] is None
    assert row["error_detail"].startswith(detail_start), row["error_detail"]
    assert row["error"] == f"{ERR_INVALID_VIDEO}: {row['error_detail']}"
    assert not (out / "videos" / f"{row['id']}.mp4").exists()  # a failed row leaves no video to trust later


# -- real renders --------------------------------------------------------------------------------------------

def test_output_overwritten_with_random_bytes_is_invalid(tmp_path):
    out = tmp_path / "run"
    row = render_one("random_bytes", spoiling(RANDOM_BYTES), out, cli_cfg(tmp_path))
    assert_invalid(row, out, "not an mp4: ")
    assert row["video_frames"] is None


def test_truncated_output_is_invalid(tmp_path, worker_cfg):
    _, cfg, worker = worker_cfg
    out = tmp_path / "run"
    row = render_one("truncated", spoiling(TRUNCATE), out, cfg, runner=worker.run)
    assert row["backend"] == "prefork"
    assert_invalid(row, out, "not an mp4: ")  # manim's mp4 keeps its index (moov) at the end: cut off
    assert not sidecar_path(out / "videos" / "truncated.mp4").exists()


def test_swapped_clip_disagrees_with_the_frames_written(tmp_path, worker_cfg):
    """A real clip of the right format passes every stream check; the render's own count of written frames
    (the prefork child's text-box recorder) gives it away."""
    _, cfg, worker = worker_cfg
    out = tmp_path / "run"
    row = render_one("swapped", spoiling(SWAP), out, cfg, runner=worker.run)
    assert_invalid(row, out, "frames ")
    assert row["error_detail"].endswith(f"vs {SCENE_FRAMES} written by the render")
    assert row["video_frames"] == 6  # the Create play alone: 0.4 s at 15 fps


def test_honest_scene_succeeds_with_the_check_recorded(tmp_path, worker_cfg):
    _, cfg, worker = worker_cfg
    out = tmp_path / "run"
    row = render_one("honest", SCENE, out, cfg, runner=worker.run)
    assert row["success"] is True and row["status"] == "ok" and row["error_kind"] is None, row
    assert (row["video_check"], row["video_frames"]) == ("ok", SCENE_FRAMES)
    assert videocheck.check_video(row["video_path"], QL, SCENE_FRAMES).ok


def test_trusted_existing_video_is_checked(tmp_path, worker_cfg):
    """Q-FUNNEL-2 (reference): a valid existing video is a skipped success (checked); an invalid one is not
    trusted but rendered again."""
    _, cfg, worker = worker_cfg
    out = tmp_path / "run"
    dest = out / "videos" / "existing.mp4"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(os.urandom(4096))
    row = render_one("existing", SCENE, out, cfg, REFERENCE, runner=worker.run)
    assert row["success"] is True and row["skipped"] is False and row["video_check"] == "ok", row
    again = render_one("existing", SCENE, out, cfg, REFERENCE, runner=worker.run)
    assert again["skipped"] is True and (again["video_check"], again["video_frames"]) == ("ok", SCENE_FRAMES)


def test_cached_invalid_video_is_no_success(tmp_path, worker_cfg):
    """An entry stored before the check existed (no ``video_check`` in its row) is checked at its hit: an invalid
    video is a miss, rendered again; entries carrying the check are served as they are."""
    _, cfg, worker = worker_cfg
    cached = replace(cfg, cache_dir=str(tmp_path / "cache"))
    first = render_one("cached", SCENE, tmp_path / "a", cached, runner=worker.run)
    assert first["success"] and first["video_check"] == "ok" and not first["cache_hit"]
    cache, key = RenderCache(cached.cache_dir), first["cache_key"]
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(os.urandom(4096))
    old = {k: v for k, v in cache.load(key)["row"].items() if k not in ("video_check", "video_frames")}
    assert cache.put(key, {**old, "video_path": str(bad)})  # tagged like any entry: only the check can refuse it

    second = render_one("cached", SCENE, tmp_path / "b", cached, runner=worker.run)
    assert second["success"] and not second["cache_hit"] and second["video_check"] == "ok", second
    third = render_one("cached", SCENE, tmp_path / "c", cached, runner=worker.run)
    assert third["cache_hit"] and (third["video_check"], third["video_frames"]) == ("ok", SCENE_FRAMES)


# -- the check on real files ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def manim_mp4(tmp_path_factory) -> Path:
    """A real -ql render of SCENE (plain CLI backend)."""
    tmp = tmp_path_factory.mktemp("manim_mp4")
    row = render_one("plain", SCENE, tmp / "run", cli_cfg(tmp))
    assert row["success"], row
    return Path(row["video_path"])


def encode(path: Path, width: int, height: int, fps: int, frames: int, codec: str = "libx264") -> Path:
    """A real clip, encoded by PyAV."""
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((height, width, 3), i * 8 % 256, np.uint8), format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode())
    return path


def faststart_copy(src: Path, dest: Path) -> Path:
    """The same packets with the index (moov) first, as a streaming mp4 has it: a truncation keeps the index."""
    with av.open(str(src)) as inp, av.open(str(dest), "w", format="mp4", options={"movflags": "faststart"}) as out:
        stream = out.add_stream(template=inp.streams.video[0])
        for packet in inp.demux(inp.streams.video[0]):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    return dest


def test_manim_output_passes(manim_mp4):
    check = videocheck.check_video(manim_mp4, QL, SCENE_FRAMES)
    assert (check.ok, check.frames) == (True, SCENE_FRAMES)
    assert videocheck.check_video(manim_mp4, None).ok  # no format expected: decode and count only


@pytest.mark.parametrize("args, detail", [
    ((852, 480, 15, 10), "852x480, expected 854x480"),
    ((854, 480, 30, 10), "30 fps, expected 15 fps"),
    ((854, 480, 15, 10, "mpeg4"), "codec mpeg4, expected h264"),
])
def test_wrong_format_is_refused_before_decoding(tmp_path, args, detail):
    check = videocheck.check_video(encode(tmp_path / "clip.mp4", *args), QL)
    assert (check.detail, check.frames) == (detail, None)


def test_any_size_and_rate_but_only_h264_without_a_format(tmp_path):
    """A script may set config.frame_rate or the pixel size (the toolkit lets it): the render's own check asks for
    no format, only H.264 decoded in full."""
    assert videocheck.check_video(encode(tmp_path / "a.mp4", 852, 480, 30, 10), None).ok
    check = videocheck.check_video(encode(tmp_path / "b.mp4", 854, 480, 15, 10, "mpeg4"), None)
    assert check.detail == "codec mpeg4, expected h264"


def test_truncated_streaming_mp4_fails_to_decode(tmp_path, manim_mp4):
    whole = faststart_copy(manim_mp4, tmp_path / "fast.mp4")
    assert videocheck.check_video(whole, QL, SCENE_FRAMES).ok
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size * 3 // 4])
    check = videocheck.check_video(cut, QL)
    assert check.detail.startswith("decode failed at frame ") and check.frames < SCENE_FRAMES, check
    assert str(tmp_path) not in check.detail  # FFmpeg's file name is left out: the row must not depend on paths


def test_no_video_stream_and_frame_counts(tmp_path):
    audio = tmp_path / "audio.mp4"
    with av.open(str(audio), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
        frame.sample_rate = 8000
        out.mux(stream.encode(frame))
        out.mux(stream.encode())
    assert videocheck.check_video(audio, QL).detail == "no video stream"
    clip = encode(tmp_path / "clip.mp4", 854, 480, 15, 10)
    assert videocheck.check_video(clip, QL, 11).detail == "frames 10 decoded vs 11 written by the render"
    assert videocheck.frames_written({"status": "ok", "frames": 10}) == 10
    assert videocheck.frames_written({"status": "tampered", "frames": 10}) is None


def test_decoding_is_bounded(manim_mp4, monkeypatch):
    """A file claiming more frames than the bound is refused before any frame is decoded."""
    monkeypatch.setattr(videocheck, "MAX_FRAMES", SCENE_FRAMES - 1)
    check = videocheck.check_video(manim_mp4, QL)
    assert (check.detail, check.frames) == (f"duration 1 s x 15 fps, more than the check's {SCENE_FRAMES - 1} frames",
                                            None)
