"""CPU backend for the per-pair frame signals: OpenCV's SIMD routines one frame at a time.

On a CPU, torch's batched integer kernels are several times slower than OpenCV's per-frame uint8 SIMD
(docs/bench_kernels.md), so the CPU path of the video stage uses this class. It has the same interface
and the same results as ``prism_kernels.FrameSignalStream`` (tests/video/test_cpu_signals.py proves
equality); all quantities are exact integers:
- gray: ``cv2.cvtColor(BGR2GRAY)`` — the reference itself;
- positive sum: ``cv2.subtract`` saturates at 0, so it is exactly ``max(cur − prev, 0)``; summed by
  ``cv2.sumElems`` (float64 accumulation of integers < 2^53: exact);
- TD count: ``count(absdiff > τ)`` (strict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np

from prism_fast.video.decode import device_type

if TYPE_CHECKING:
    import torch

    from prism_kernels import StreamTotals


@dataclass(frozen=True)
class PlainTotals:
    """``prism_kernels.StreamTotals`` as Python ints: what a finished CPU stream yields without torch (the render
    workers' TD_raw). Same fields, one entry per pair; ``Cv2FrameSignalStream.finish`` gives the tensor form."""

    frame_count: int
    height: int
    width: int
    positive: list[int]
    changed: list[int]
    absolute: list[int] | None


class Cv2FrameSignalStream:
    """Per-pair signals over BGR chunks ``(T, H, W, 3) uint8`` (numpy or CPU tensor), one frame at a time."""

    def __init__(self, tau: int = 25, *, absolute: bool = False) -> None:
        self.tau = int(tau)
        self.absolute = bool(absolute)
        self._prev: np.ndarray | None = None
        self._frames = 0
        self._shape: tuple[int, int] | None = None
        self._positive: list[int] = []
        self._changed: list[int] = []
        self._abs: list[int] = []

    def update(self, bgr: np.ndarray | torch.Tensor) -> torch.Tensor:
        import torch

        arr = bgr.numpy() if isinstance(bgr, torch.Tensor) else np.asarray(bgr)
        if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8:
            raise ValueError(f"bgr: expected (T, H, W, 3) uint8, got {tuple(arr.shape)} {arr.dtype}")
        grays = np.empty(arr.shape[:3], dtype=np.uint8)
        for t in range(arr.shape[0]):
            grays[t] = self.update_gray_frame(cv2.cvtColor(arr[t], cv2.COLOR_BGR2GRAY))
        return torch.from_numpy(grays)

    def update_bgr_frame(self, bgr: np.ndarray) -> np.ndarray:
        """One ``(H, W, 3) uint8`` BGR NumPy frame; returns its gray frame."""
        return self.update_gray_frame(cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY))

    def update_gray_frame(self, gray: np.ndarray) -> np.ndarray:
        hw = (int(gray.shape[0]), int(gray.shape[1]))
        if self._shape is None:
            self._shape = hw
        elif hw != self._shape:
            raise ValueError(f"gray: expected frames of H×W {self._shape} (as earlier chunks), got {hw}")
        prev = self._prev
        if prev is not None:
            self._positive.append(int(cv2.sumElems(cv2.subtract(gray, prev))[0]))
            mag = cv2.absdiff(gray, prev)
            self._changed.append(int(np.count_nonzero(mag > self.tau)))
            if self.absolute:
                self._abs.append(int(cv2.sumElems(mag)[0]))
        self._prev = gray
        self._frames += 1
        return gray

    def finish_plain(self) -> PlainTotals:
        """The totals as Python ints (no torch import)."""
        h, w = self._shape if self._shape is not None else (0, 0)
        return PlainTotals(self._frames, h, w, list(self._positive), list(self._changed),
                           list(self._abs) if self.absolute else None)

    def finish(self) -> StreamTotals:
        """The totals as ``prism_kernels.StreamTotals`` (int64 tensors), as the batched stream gives them."""
        import torch
        from prism_kernels import StreamTotals

        plain = self.finish_plain()

        def vec(values: list[int]) -> torch.Tensor:
            return torch.tensor(values, dtype=torch.int64)

        return StreamTotals(plain.frame_count, plain.height, plain.width, vec(plain.positive), vec(plain.changed),
                            vec(plain.absolute) if plain.absolute is not None else None)


def make_signal_stream(backend: str, device: str | torch.device, tau: int = 25, *, absolute: bool = False):
    """``auto`` → OpenCV per-frame on CPU, batched torch kernels elsewhere; or ``cv2`` / ``torch``. Only the
    torch stream imports torch."""
    if backend not in ("auto", "cv2", "torch"):
        raise ValueError(f"backend: expected 'auto', 'cv2' or 'torch', got {backend!r}")
    kind = device_type(device)
    if backend == "cv2" or (backend == "auto" and kind == "cpu"):
        if kind != "cpu":
            raise ValueError(f"backend 'cv2' runs on the CPU; got device {device}")
        return Cv2FrameSignalStream(tau, absolute=absolute)
    from prism_kernels import FrameSignalStream

    return FrameSignalStream(tau, absolute=absolute)
