"""Streaming frame statistics: feed BGR chunks of one video in order, never holding all frames.

The last gray frame of each chunk is carried to pair it with the first frame of the next chunk, so the
chunked result equals the whole-video result exactly (all quantities are integers).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_tensor
from .diff import PairSignals, pair_signals
from .gray import bgr_to_gray


@dataclass(frozen=True)
class StreamTotals:
    """What a finished stream yields. Tensors are 1-D int64 on the stream's device, one entry per pair."""

    frame_count: int            # decoded frames fed
    height: int
    width: int
    positive: torch.Tensor      # (P,) Σ max(Δ, 0)
    changed: torch.Tensor       # (P,) count(|Δ| > τ)
    absolute: torch.Tensor | None  # (P,) Σ |Δ| if requested

    @property
    def pair_count(self) -> int:
        return max(self.frame_count - 1, 0)


class FrameSignalStream:
    """Accumulates the per-pair signals of one video over BGR chunks ``(T, H, W, 3) uint8``.

    ``update`` returns the chunk's gray frames ``(T, H, W) uint8`` so a caller can keep the few it needs
    (event endpoints) without converting twice.
    """

    def __init__(self, tau: int = 25, *, absolute: bool = False) -> None:
        self.tau = int(tau)
        self.absolute = bool(absolute)
        self._last: torch.Tensor | None = None
        self._frames = 0
        self._shape: tuple[int, int] | None = None
        self._parts: list[PairSignals] = []

    def update(self, bgr: torch.Tensor) -> torch.Tensor:
        check_tensor(bgr, "bgr", ndim=4, dtype=torch.uint8, last_dim=3, layout="(T, H, W, 3) uint8")
        gray = bgr_to_gray(bgr)
        return self.update_gray(gray)

    def update_gray(self, gray: torch.Tensor) -> torch.Tensor:
        check_tensor(gray, "gray", ndim=3, dtype=torch.uint8, layout="(T, H, W) uint8")
        if gray.shape[0] == 0:
            return gray
        hw = (int(gray.shape[1]), int(gray.shape[2]))
        if self._shape is None:
            self._shape = hw
        elif hw != self._shape:
            raise ValueError(f"gray: expected frames of H×W {self._shape} (as earlier chunks), got {hw}")
        if self._last is not None:
            if self._last.device != gray.device:
                raise ValueError(f"gray: expected device {self._last.device} (as earlier chunks), got {gray.device}")
            self._parts.append(pair_signals(self._last[None], gray[:1], self.tau, absolute=self.absolute))
        if gray.shape[0] > 1:
            self._parts.append(pair_signals(gray[:-1], gray[1:], self.tau, absolute=self.absolute))
        self._last = gray[-1].clone()
        self._frames += int(gray.shape[0])
        return gray

    def finish(self) -> StreamTotals:
        h, w = self._shape if self._shape is not None else (0, 0)
        dev = self._last.device if self._last is not None else torch.device("cpu")
        empty = torch.zeros(0, dtype=torch.int64, device=dev)
        if self._parts:
            positive = torch.cat([p.positive for p in self._parts])
            changed = torch.cat([p.changed for p in self._parts])
            absolute = torch.cat([p.absolute for p in self._parts]) if self.absolute else None
        else:
            positive, changed = empty, empty.clone()
            absolute = empty.clone() if self.absolute else None
        return StreamTotals(self._frames, h, w, positive, changed, absolute)
