"""yuv420_to_bgr / nv12_to_bgr vs the oracle that matters: the BGR frames ``cv2.VideoCapture`` returns.

Lossless x264 clips carry chosen planes through OpenCV's own decode + swscale conversion; the exhaustive case
holds every one of the 2^24 (Y, U, V) triples. Renders are compared in tests/video/test_video_yuv_decode.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prism_fast.video.yuv import (compare_with_opencv, decode_planes, host_selftest, opencv_frames,
                                  stream_coefficients, write_lossless_yuv420)
from prism_kernels import BT601_LIMITED, nv12_to_bgr, swscale_coefficients, yuv420_to_bgr

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]
H, W = 480, 854                                 # a -ql render's size (W is not a multiple of 8 or 16)
CHROMA = (H // 2) * (W // 2)


def _all_triples_clip(tmp_path):
    """Planes holding each (U, V) pair with each of the 256 Y values once: chroma sample k carries the pair
    k mod 2^16 and its 2×2 luma block the Y values 4·(k div 2^16) + 0..3 — 2^22 chroma samples, 41 frames."""
    k = np.arange(1 << 22, dtype=np.int64)
    pair, block = k & 0xFFFF, k >> 16
    n_frames = -(-k.size // CHROMA)
    u = np.zeros(n_frames * CHROMA, np.uint8)
    v = np.zeros(n_frames * CHROMA, np.uint8)
    quad = np.zeros((n_frames * CHROMA, 4), np.uint8)
    u[:k.size], v[:k.size] = pair >> 8, pair & 0xFF
    quad[:k.size] = (4 * block)[:, None] + np.arange(4)
    u = u.reshape(n_frames, H // 2, W // 2)
    v = v.reshape(n_frames, H // 2, W // 2)
    y = quad.reshape(n_frames, H // 2, W // 2, 2, 2).transpose(0, 1, 3, 2, 4).reshape(n_frames, H, W)
    return write_lossless_yuv420(tmp_path / "all_triples.mp4", list(y), list(u), list(v)), (y, u, v)


@pytest.mark.slow
def test_all_2pow24_triples_equal_opencv(tmp_path):
    path, planes = _all_triples_clip(tmp_path)
    y, u, v = decode_planes(path)
    assert all(np.array_equal(a, b) for a, b in zip((y, u, v), planes)), "x264 qp 0 must be lossless"
    triples = (y.astype(np.int64) << 16) | (np.repeat(np.repeat(u, 2, 1), 2, 2).astype(np.int64) << 8) \
        | np.repeat(np.repeat(v, 2, 1), 2, 2)
    assert np.unique(triples).size == 1 << 24
    expected = opencv_frames(path)
    got = yuv420_to_bgr(torch.from_numpy(y), torch.from_numpy(u), torch.from_numpy(v)).numpy()
    assert got.shape == expected.shape
    mismatch = np.count_nonzero(got != expected)
    assert mismatch == 0, f"{mismatch} channel values differ from OpenCV"


def _random_planes(seed: int, frames: int = 2, height: int = H, width: int = W):
    rng = np.random.default_rng(seed)
    return ([rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(frames)],
            [rng.integers(0, 256, (height // 2, width // 2), dtype=np.uint8) for _ in range(frames)],
            [rng.integers(0, 256, (height // 2, width // 2), dtype=np.uint8) for _ in range(frames)])


# AVColorSpace / AVColorRange tags OpenCV honours: each maps to swscale's coefficient row for it.
@pytest.mark.parametrize("colorspace, color_range, matrix, full", [
    (None, None, "bt601", False),   # untagged: what manim writes
    (1, None, "bt709", False),
    (5, None, "bt601", False),
    (6, None, "bt601", False),
    (None, 2, "bt601", True),
    (1, 2, "bt709", True),
])
def test_tagged_streams_equal_opencv(tmp_path, colorspace, color_range, matrix, full):
    path = write_lossless_yuv420(tmp_path / "tagged.mp4", *_random_planes(7), colorspace=colorspace,
                                 color_range=color_range)
    check = compare_with_opencv(path)   # coefficients chosen from the stream's tags
    assert check.identical, check
    assert compare_with_opencv(path, swscale_coefficients(matrix, full)).identical


def test_other_sizes_equal_opencv(tmp_path):
    for height, width in ((64, 64), (720, 1280), (1080, 1920)):
        path = write_lossless_yuv420(tmp_path / f"s{width}.mp4", *_random_planes(3, 1, height, width))
        check = compare_with_opencv(path, BT601_LIMITED)
        assert check.identical, (height, width, check)


def test_textbook_float_formula_is_not_exact(tmp_path):
    """Why the kernel is integer: the textbook BT.601 float formula misses OpenCV's frames on many pixels."""
    path = write_lossless_yuv420(tmp_path / "float.mp4", *_random_planes(11, 1))
    y, u, v = (a.astype(np.float64) for a in decode_planes(path))
    u = np.repeat(np.repeat(u, 2, 1), 2, 2) - 128
    v = np.repeat(np.repeat(v, 2, 1), 2, 2) - 128
    yy = 1.164 * (y - 16)
    bgr = np.stack([yy + 2.018 * u, yy - 0.391 * u - 0.813 * v, yy + 1.596 * v], -1)
    textbook = np.clip(np.rint(bgr), 0, 255).astype(np.uint8)
    frac = np.count_nonzero(textbook != opencv_frames(path)) / textbook.size
    assert frac > 0.05


def test_unsupported_tags_are_refused():
    assert stream_coefficients("yuv420p", 2, 0) == (BT601_LIMITED, None)
    assert stream_coefficients("yuv420p10le", 2, 0)[0] is None
    coeffs, why = stream_coefficients("yuv420p", 9, 0)          # BT.2020: not checked against OpenCV
    assert coeffs is None and "colorspace tag 9" in why
    assert stream_coefficients("yuvj420p", 2, 0)[0] == swscale_coefficients("bt601", True)


def test_host_selftest_passes_here():
    check = host_selftest()
    assert check.identical and check.max_abs_diff == 0 and check.pixels == 2 * 64 * 854 * 3


@pytest.mark.parametrize("device", DEVICES)
def test_nv12_layout_and_devices_agree(tmp_path, device):
    """NV12 (NVDEC's native layout; here made by PyAV from the same frame) converts to the same frames, on
    every device."""
    import av

    from prism_fast.video.yuv import split_nv12

    path = write_lossless_yuv420(tmp_path / "nv12.mp4", *_random_planes(5, 3))
    expected = opencv_frames(path)
    with av.open(str(path)) as container:
        nv12 = np.stack([f.reformat(format="nv12").to_ndarray() for f in container.decode(video=0)])
    assert nv12.shape == (3, H + H // 2, W)
    y, uv = split_nv12(torch.from_numpy(nv12).to(device), H, W)
    got = nv12_to_bgr(y, uv)
    assert got.device.type == device and got.dtype == torch.uint8
    assert np.array_equal(got.cpu().numpy(), expected)
    yp, up, vp = (torch.from_numpy(a).to(device) for a in decode_planes(path))
    assert torch.equal(yuv420_to_bgr(yp, up, vp).cpu(), got.cpu())


def test_odd_sizes_crop_the_chroma_blocks():
    y = torch.arange(15, dtype=torch.uint8).reshape(1, 3, 5)
    u = torch.full((1, 2, 3), 128, dtype=torch.uint8)
    v = torch.tensor([[[16, 128, 240], [128, 128, 128]]], dtype=torch.uint8)
    out = yuv420_to_bgr(y, u, v)
    assert out.shape == (1, 3, 5, 3)
    even = yuv420_to_bgr(torch.nn.functional.pad(y, (0, 1, 0, 1)), u, v)   # 4×6 holds the 3×5 picture
    assert torch.equal(out, even[:, :3, :5])


@pytest.mark.parametrize("args, msg", [
    ((torch.zeros(1, 4, 4, dtype=torch.uint8), torch.zeros(1, 2, 2, dtype=torch.uint8),
      torch.zeros(1, 2, 3, dtype=torch.uint8)), r"v: expected shape \(1, 2, 2\) for y of shape \(1, 4, 4\), got"),
    ((torch.zeros(4, 4, dtype=torch.uint8), torch.zeros(1, 2, 2, dtype=torch.uint8),
      torch.zeros(1, 2, 2, dtype=torch.uint8)), r"y: expected shape \(T, H, W\) uint8 \(3 dims\), got \(4, 4\)"),
    ((torch.zeros(1, 4, 4, dtype=torch.int16), torch.zeros(1, 2, 2, dtype=torch.uint8),
      torch.zeros(1, 2, 2, dtype=torch.uint8)), r"y: expected dtype torch.uint8, got torch.int16"),
])
def test_rejects_bad_input(args, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        yuv420_to_bgr(*args)


def test_unknown_matrix():
    with pytest.raises(ValueError, match=r"expected one of \('bt601', 'bt709'\), got 'bt2020'"):
        swscale_coefficients("bt2020")
