"""Decoded YUV planes → the exact BGR frames OpenCV returns: which streams qualify, plane layouts, and a
host self-test.

H.264 decoding is bit-exact by the standard, so every decoder (FFmpeg on the CPU, NVDEC on a GPU) yields the
same Y/U/V planes; only the YUV → BGR step can differ. ``prism_kernels.yuv420_to_bgr`` reproduces OpenCV's
(swscale's) step exactly for the matrices and ranges listed in :data:`SUPPORTED_COLORSPACES` — checked
against ``cv2.VideoCapture`` on all 2^24 (Y, U, V) triples (tests/kernels/test_kernel_yuv.py). A stream
outside that set is never converted here: :func:`stream_coefficients` says why and the caller decodes it
with OpenCV instead (recorded as ``decoder_fallback``).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from prism_kernels import YuvCoefficients, swscale_coefficients, yuv420_to_bgr

# AVColorSpace → swscale matrix, for the tags checked against OpenCV (2 = unspecified: swscale's default).
SUPPORTED_COLORSPACES = {1: "bt709", 2: "bt601", 5: "bt601", 6: "bt601"}
SUPPORTED_PIX_FMTS = ("yuv420p", "yuvj420p")
AVCOL_RANGE_JPEG = 2


def stream_coefficients(pix_fmt: str, colorspace: int, color_range: int) -> tuple[YuvCoefficients | None, str | None]:
    """``(coefficients, None)`` for a stream whose OpenCV frames the kernel reproduces, else ``(None, why)``."""
    if pix_fmt not in SUPPORTED_PIX_FMTS:
        return None, f"pixel format {pix_fmt} (exact YUV path: {', '.join(SUPPORTED_PIX_FMTS)} only)"
    matrix = SUPPORTED_COLORSPACES.get(int(colorspace))
    if matrix is None:
        return None, f"colorspace tag {int(colorspace)} (exact YUV path: {sorted(SUPPORTED_COLORSPACES)} only)"
    full = pix_fmt == "yuvj420p" or int(color_range) == AVCOL_RANGE_JPEG
    return swscale_coefficients(matrix, full), None


@dataclass(frozen=True)
class StreamTags:
    pix_fmt: str
    colorspace: int
    color_range: int
    width: int
    height: int


def probe_stream_tags(path: str | Path) -> StreamTags:
    """The first video stream's format and colour tags as PyAV's decoder context reports them (no decoding)."""
    import av

    with av.open(str(path)) as container:
        ctx = container.streams.video[0].codec_context
        return StreamTags(str(ctx.pix_fmt), int(ctx.colorspace), int(ctx.color_range), int(ctx.width),
                          int(ctx.height))


def frame_planes(frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A PyAV ``yuv420p`` frame's Y, U, V planes as ``(H, W)``, ``(⌈H/2⌉, ⌈W/2⌉)`` × 2 uint8 views (no copy
    beyond dropping the line padding)."""
    out = []
    for plane in frame.planes[:3]:
        buf = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
        out.append(buf[:, :plane.width])
    return out[0], out[1], out[2]


def split_nv12(nv12: torch.Tensor, height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """NV12 buffers ``(T, ≥H + ⌈H/2⌉, ≥W) uint8`` (luma rows, then interleaved U/V rows; pitch may exceed W)
    → views ``y (T, H, W)`` and ``uv (T, ⌈H/2⌉, ⌈W/2⌉, 2)``."""
    if nv12.ndim != 3 or nv12.dtype != torch.uint8:
        raise ValueError(f"nv12: expected (T, rows, pitch) uint8, got {tuple(nv12.shape)} {nv12.dtype}")
    h2, w2 = (height + 1) // 2, (width + 1) // 2
    if nv12.shape[1] < height + h2 or nv12.shape[2] < 2 * w2:
        raise ValueError(f"nv12: expected at least ({height + h2}, {2 * w2}) per frame for {height}×{width}, "
                         f"got {tuple(nv12.shape[1:])}")
    y = nv12[:, :height, :width]
    uv = nv12[:, height:height + h2, :2 * w2].unflatten(2, (w2, 2))
    return y, uv


# --- lossless test clips and the host self-test --------------------------------------------------------------

LOSSLESS_X264 = {"qp": "0", "preset": "ultrafast"}


def write_lossless_yuv420(path: str | Path, ys, us, vs, *, fps: int = 15, colorspace: int | None = None,
                          color_range: int | None = None, x264_options: dict | None = None) -> Path:
    """Encode planes with x264 at qp 0 (lossless: the decoded planes are exactly these) so that
    ``cv2.VideoCapture`` converts known (Y, U, V) values. Even H and W (x264's 4:2:0 requirement).
    ``x264_options`` replaces the lossless settings (e.g. a lossy High-profile clip that NVDEC can decode:
    NVDEC has no lossless High 4:4:4 Predictive profile)."""
    import av

    height, width = ys[0].shape
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = dict(LOSSLESS_X264 if x264_options is None else x264_options)
        if colorspace is not None:
            stream.codec_context.colorspace = colorspace
        if color_range is not None:
            stream.codec_context.color_range = color_range
        for y, u, v in zip(ys, us, vs):
            frame = av.VideoFrame(width, height, "yuv420p")
            for dst, src in zip(frame_planes(frame), (y, u, v)):
                dst[...] = src
            if colorspace is not None:
                frame.colorspace = colorspace
            if color_range is not None:
                frame.color_range = color_range
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return Path(path)


def decode_planes(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All frames' planes, stacked ``(T, H, W)``, ``(T, ⌈H/2⌉, ⌈W/2⌉)`` × 2 (PyAV, CPU)."""
    import av

    ys, us, vs = [], [], []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            y, u, v = frame_planes(frame)
            ys.append(y.copy())
            us.append(u.copy())
            vs.append(v.copy())
    return np.stack(ys), np.stack(us), np.stack(vs)


def opencv_frames(path: str | Path) -> np.ndarray:
    """Every BGR frame ``cv2.VideoCapture`` returns, stacked ``(T, H, W, 3)``."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    frames = []
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(frame)
    finally:
        cap.release()
    return np.stack(frames) if frames else np.zeros((0, 0, 0, 3), np.uint8)


@dataclass(frozen=True)
class ParityCheck:
    identical: bool
    pixels: int
    differing_fraction: float
    max_abs_diff: int
    detail: str


def compare_with_opencv(path: str | Path, coeffs: YuvCoefficients | None = None) -> ParityCheck:
    """Convert the file's decoded planes with the kernel and compare with OpenCV's frames of the same file."""
    y, u, v = decode_planes(path)
    if coeffs is None:
        tags = probe_stream_tags(path)
        coeffs, why = stream_coefficients(tags.pix_fmt, tags.colorspace, tags.color_range)
        if coeffs is None:
            return ParityCheck(False, 0, 1.0, 255, f"not on the exact path: {why}")
    ours = yuv420_to_bgr(torch.from_numpy(y), torch.from_numpy(u), torch.from_numpy(v), coeffs).numpy()
    ref = opencv_frames(path)
    if ours.shape != ref.shape:
        return ParityCheck(False, 0, 1.0, 255, f"frame shapes differ: kernel {ours.shape}, OpenCV {ref.shape}")
    diff = np.abs(ours.astype(np.int16) - ref.astype(np.int16))
    n = int(np.count_nonzero(diff))
    return ParityCheck(n == 0, int(diff.size), n / max(diff.size, 1), int(diff.max(initial=0)),
                       f"{ours.shape[0]} frames {ours.shape[2]}×{ours.shape[1]}")


def host_selftest(workdir: str | Path | None = None, *, height: int = 64, width: int = 854,
                  frames: int = 2, seed: int = 0) -> ParityCheck:
    """Random planes (every value range, width 854 like -ql renders) through a lossless clip: is the kernel
    identical to *this host's* ``cv2.VideoCapture`` frames? (False on a CPU where OpenCV's FFmpeg does not run
    swscale's SSSE3 routine — then the exact YUV path must not be used for parity numbers here.)"""
    rng = np.random.default_rng(seed)
    ys = [rng.integers(0, 256, (height, width), dtype=np.uint8) for _ in range(frames)]
    us = [rng.integers(0, 256, (height // 2, width // 2), dtype=np.uint8) for _ in range(frames)]
    vs = [rng.integers(0, 256, (height // 2, width // 2), dtype=np.uint8) for _ in range(frames)]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = write_lossless_yuv420(Path(tmp) / "selftest.mp4", ys, us, vs)
        return compare_with_opencv(path)
