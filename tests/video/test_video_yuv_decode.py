"""The exact YUV decode path (PyAV planes → prism_kernels.yuv420_to_bgr) on real Manim renders: frames, TD and
PADVC are identical to the OpenCV path (spec D-1). NVDEC's case is `gpu`-marked (scripts/device_check.sh)."""

from __future__ import annotations

import hashlib

import cv2
import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.metrics.padvc import PadvcConfig, compute_padvc_details
from prism_fast.metrics.td import compute_td_raw
from prism_fast.video.decode import VideoFrames
from prism_fast.video.ocr import OcrEngine, OcrSettings, TextMasker
from prism_fast.video.yuv import compare_with_opencv, write_lossless_yuv420


def _opencv(path) -> np.ndarray:
    return np.stack(oracle.read_frames_cv2(path))


def _all_videos(decode_video, bundled_renders):
    return {"DecodeClip": decode_video, **bundled_renders}


@pytest.mark.slow
def test_kernel_equals_opencv_on_bundled_renders(decode_video, bundled_renders):
    for name, path in _all_videos(decode_video, bundled_renders).items():
        check = compare_with_opencv(path)
        assert check.identical, (name, check)
        assert check.pixels > 0


@pytest.mark.parametrize("chunk", [7, 64])
def test_yuv_decoder_chunks_equal_opencv(decode_video, chunk):
    expected = _opencv(decode_video)
    vf = VideoFrames(decode_video, decoder="yuv", chunk_size=chunk)
    chunks = list(vf)
    assert all(c.dtype == torch.uint8 and c.shape[1:] == (480, 854, 3) and c.shape[0] <= chunk for c in chunks)
    assert np.array_equal(torch.cat(chunks).numpy(), expected)
    assert vf.fields() == {"decoder": "yuv", "decoder_fallback": None, "decoded_frame_count": expected.shape[0],
                           "decode_error": None}
    frames = list(VideoFrames(decode_video, decoder="yuv").iter_frames())
    assert np.array_equal(np.stack(frames), expected)


@pytest.mark.slow
def test_td_identical_through_the_yuv_path(decode_video, bundled_renders):
    for name, path in _all_videos(decode_video, bundled_renders).items():
        ref = compute_td_raw(path, decoder="opencv")
        for signal_backend in ("cv2", "torch"):
            got = compute_td_raw(path, decoder="yuv", signal_backend=signal_backend)
            assert got.status == ref.status == "ok", name
            assert got.td_raw == ref.td_raw and got.ratio_sum == ref.ratio_sum, (name, signal_backend)
            assert (got.pair_count, got.decoded_frame_count) == (ref.pair_count, ref.decoded_frame_count)
            assert got.decoder == "yuv" and got.decoder_fallback is None


class BrightRegionEngine(OcrEngine):
    """Deterministic stand-in OCR: one box per bright connected region; remembers a hash of every frame it
    was given, so the test also sees that OCR received byte-identical frames."""

    name = "bright-region"

    def __init__(self):
        self.seen: list[str] = []

    def polygons(self, frame_bgr):
        self.seen.append(hashlib.sha256(np.ascontiguousarray(frame_bgr).tobytes()).hexdigest())
        bright = (cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2GRAY) > 160).astype(np.uint8)
        _, _, stats, _ = cv2.connectedComponentsWithStats(bright, connectivity=8)
        return [[[int(x), int(y)], [int(x + w - 1), int(y)], [int(x + w - 1), int(y + h - 1)], [int(x), int(y + h - 1)]]
                for x, y, w, h, area in stats[1:] if area >= 20]


class _Pvd:
    pvd_raw = 6


@pytest.mark.slow
def test_padvc_identical_through_the_yuv_path(bundled_renders):
    for name, path in bundled_renders.items():
        results, seen = {}, {}
        for decoder in ("opencv", "yuv"):
            engine = BrightRegionEngine()
            details = compute_padvc_details(path, _Pvd(), TextMasker(engine, OcrSettings()),
                                            config=PadvcConfig(), decoder=decoder)
            details.pop("_decoder", None)
            details.pop("_decoder_fallback", None)
            results[decoder], seen[decoder] = details, engine.seen
        assert results["yuv"] == results["opencv"], name
        assert seen["yuv"] == seen["opencv"] and len(seen["yuv"]) > 0, name
        assert len(results["yuv"]["events"]) > 0, name


def test_stream_outside_the_exact_set_is_decoded_by_opencv(tmp_path):
    rng = np.random.default_rng(2)
    planes = ([rng.integers(0, 256, (32, 64), dtype=np.uint8)], [rng.integers(0, 256, (16, 32), dtype=np.uint8)],
              [rng.integers(0, 256, (16, 32), dtype=np.uint8)])
    path = write_lossless_yuv420(tmp_path / "bt2020.mp4", *planes, colorspace=9)   # BT.2020 tag: not covered
    vf = VideoFrames(path, decoder="yuv")
    with pytest.warns(RuntimeWarning, match=r"yuv path not exact for this stream \(colorspace tag 9"):
        got = torch.cat(list(vf)).numpy()
    assert np.array_equal(got, _opencv(path))
    assert vf.fields()["decoder"] == "opencv" and vf.fields()["decoder_fallback"].startswith("yuv: colorspace tag 9")


def test_unreadable_file_records_the_error(tmp_path):
    bad = tmp_path / "garbage.mp4"
    bad.write_bytes(b"not a video")
    vf = VideoFrames(bad, decoder="yuv")
    assert list(vf) == [] and vf.fields()["decode_error"].startswith("pyav open failed")


@pytest.mark.gpu
def test_yuv_planes_converted_on_the_gpu_equal_opencv(decode_video):
    chunks = list(VideoFrames(decode_video, decoder="yuv", device="cuda"))
    assert all(c.device.type == "cuda" for c in chunks)
    assert np.array_equal(torch.cat(chunks).cpu().numpy(), _opencv(decode_video))


@pytest.mark.gpu
def test_nvdec_frames_equal_opencv(decode_video):
    vf = VideoFrames(decode_video, decoder="nvdec", device="cuda")
    chunks = list(vf)
    assert vf.fields()["decode_error"] is None and vf.fields()["decoder"] == "nvdec", vf.fields()
    assert all(c.device.type == "cuda" for c in chunks)
    assert np.array_equal(torch.cat(chunks).cpu().numpy(), _opencv(decode_video))


@pytest.mark.gpu
def test_td_identical_with_nvdec(decode_video):
    ref = compute_td_raw(decode_video, decoder="opencv")
    got = compute_td_raw(decode_video, decoder="nvdec", device="cuda")
    assert got.decoder == "nvdec" and got.td_raw == ref.td_raw and got.ratio_sum == ref.ratio_sum


@pytest.mark.gpu
def test_padvc_identical_on_the_gpu(bundled_renders):
    """Decoders opencv (uploaded), yuv and nvdec with metrics.device=cuda (pair signals, text and geometry energies
    on the GPU): the CPU row."""
    for name, path in bundled_renders.items():
        rows, seen = {}, {}
        for decoder, device in (("opencv", "cpu"), ("opencv", "cuda"), ("yuv", "cuda"), ("nvdec", "cuda")):
            engine = BrightRegionEngine()
            details = compute_padvc_details(path, _Pvd(), TextMasker(engine, OcrSettings()), config=PadvcConfig(),
                                            decoder=decoder, device=device)
            assert details.pop("_decoder") == decoder and details.pop("_decoder_fallback") is None, (name, decoder)
            rows[(decoder, device)], seen[(decoder, device)] = details, engine.seen
        assert len(rows[("opencv", "cpu")]["events"]) > 0, name
        for key in (("opencv", "cuda"), ("yuv", "cuda"), ("nvdec", "cuda")):
            assert rows[key] == rows[("opencv", "cpu")], (name, key)
            assert seen[key] == seen[("opencv", "cpu")], (name, key)
