"""Decoders on a real Manim -ql render: decord CPU, PyAV and OpenCV give bit-identical BGR frames."""

from __future__ import annotations

import av
import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.video.decode import VideoFrames, probe_video


def _opencv_frames(path) -> np.ndarray:
    return np.stack(oracle.read_frames_cv2(path))


def test_probe_reports_container_metadata(decode_video):
    p = probe_video(decode_video)
    assert p.opened and p.error_detail is None
    assert p.fps == 15.0 and (p.width, p.height) == (854, 480)   # -ql: 854×480 at 15 fps
    with av.open(str(decode_video)) as c:
        assert c.streams.video[0].frames == p.container_frame_count
    assert p.container_frame_count == len(_opencv_frames(decode_video))


def test_opencv_decodes_on_one_thread_and_gives_the_default_capture_frames(decode_video):
    import cv2

    from prism_fast.video.decode import open_capture

    cap = open_capture(decode_video)
    try:
        assert cap.isOpened() and cap.get(cv2.CAP_PROP_N_THREADS) == 1.0
    finally:
        cap.release()
    expected = _opencv_frames(decode_video)  # cv2.VideoCapture(path): the toolkit's call, FFmpeg's thread default
    got = np.stack(list(VideoFrames(decode_video, decoder="opencv").iter_frames()))
    assert got.shape == expected.shape and np.array_equal(got, expected)


@pytest.mark.parametrize("decoder", ["opencv", "decord", "pyav"])
@pytest.mark.parametrize("chunk", [7, 64])
def test_decoders_bit_identical_to_opencv(decode_video, decoder, chunk):
    expected = _opencv_frames(decode_video)
    vf = VideoFrames(decode_video, decoder=decoder, chunk_size=chunk)
    chunks = list(vf)
    assert all(c.dtype == torch.uint8 and c.shape[1:] == (480, 854, 3) for c in chunks)
    assert all(c.shape[0] <= chunk for c in chunks)
    got = torch.cat(chunks).numpy()
    assert got.shape == expected.shape
    assert np.array_equal(got, expected), f"{decoder}: max |Δ| = {np.abs(got.astype(int) - expected).max()}"
    assert vf.fields() == {"decoder": decoder, "decoder_fallback": None,
                           "decoded_frame_count": expected.shape[0], "decode_error": None}


def test_auto_decodes_with_opencv_on_cpu_and_the_exact_yuv_path_for_a_gpu(decode_video):
    from prism_fast.video.decode import nvdec_status

    vf = VideoFrames(decode_video, decoder="auto")
    n = sum(c.shape[0] for c in vf)
    assert vf.fields() == {"decoder": "opencv", "decoder_fallback": None, "decoded_frame_count": n,
                           "decode_error": None}
    gpu_choice = VideoFrames(decode_video, decoder="auto", device="cuda").decoder   # nothing decoded yet
    assert gpu_choice == ("nvdec" if nvdec_status()[0] else "yuv")


@pytest.mark.parametrize("decoder", ["opencv", "decord", "pyav"])
def test_iter_frames_equals_the_chunks(decode_video, decoder):
    expected = _opencv_frames(decode_video)
    vf = VideoFrames(decode_video, decoder=decoder)
    got = list(vf.iter_frames())
    assert all(f.dtype == np.uint8 and f.shape == (480, 854, 3) and f.flags.c_contiguous for f in got)
    assert np.array_equal(np.stack(got), expected)
    assert vf.fields() == {"decoder": decoder, "decoder_fallback": None,
                           "decoded_frame_count": expected.shape[0], "decode_error": None}


def test_explicit_decord_records_error_without_fallback(tmp_path):
    bad = tmp_path / "not_a_video.mp4"
    bad.write_bytes(b"\x00" * 1000)
    vf = VideoFrames(bad, decoder="decord")
    with pytest.warns(RuntimeWarning, match="decord failed"):
        assert list(vf) == []
    assert vf.fields()["decoder"] == "decord" and vf.fields()["decode_error"].startswith("decord failed")


def test_decord_falls_back_to_pyav_loudly(tmp_path):
    bad = tmp_path / "not_a_video.mp4"
    bad.write_bytes(b"\x00" * 1000)
    vf = VideoFrames(bad, decoder="decord")
    vf.requested = "auto"   # decord chosen by `auto` (as it was for GPUs before the exact YUV path)
    with pytest.warns(RuntimeWarning, match="falling back to PyAV"):
        chunks = list(vf)
    assert chunks == []
    f = vf.fields()
    assert f["decoder"] == "pyav" and f["decoder_fallback"].startswith("decord failed")
    assert f["decode_error"] is not None and f["decoded_frame_count"] == 0


def test_unreadable_video(tmp_path):
    bad = tmp_path / "garbage.mp4"
    bad.write_bytes(b"not a video")
    assert not probe_video(bad).opened
    assert not probe_video(tmp_path / "missing.mp4").opened
    vf = VideoFrames(bad, decoder="opencv")
    assert list(vf) == [] and vf.fields()["decode_error"] is not None


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"expected one of \('opencv', 'decord', 'pyav', 'yuv', 'nvdec', 'auto'\), "
                                         r"got 'nvdev'"):
        VideoFrames("x.mp4", decoder="nvdev")
    with pytest.raises(ValueError, match="decoder 'nvdec': needs a cuda device, got cpu"):
        VideoFrames("x.mp4", decoder="nvdec")
    with pytest.raises(ValueError, match="expected >= 1, got 0"):
        VideoFrames("x.mp4", chunk_size=0)
    with pytest.raises(ValueError, match="gpu_decode: needs decoder 'decord'/'auto' and a cuda device"):
        VideoFrames("x.mp4", decoder="decord", gpu_decode=True)


def test_iterating_twice_restarts(decode_video):
    vf = VideoFrames(decode_video, decoder="pyav", chunk_size=10)
    first = torch.cat(list(vf))
    second = torch.cat(list(vf))
    assert torch.equal(first, second) and vf.decoded_frames == first.shape[0]


@pytest.mark.gpu
def test_cuda_upload_equals_cpu(decode_video):
    cpu = torch.cat(list(VideoFrames(decode_video, decoder="decord")))
    gpu = list(VideoFrames(decode_video, decoder="decord", device="cuda"))
    assert all(c.device.type == "cuda" for c in gpu)
    assert torch.equal(torch.cat(gpu).cpu(), cpu)
