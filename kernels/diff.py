"""Consecutive-frame difference signals over gray frame batches.

All sums are exact integers (int64). The PADVC event signal is the positive (brightening) increment sum;
TD counts pixels whose absolute change is strictly greater than τ.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_same_shape, check_tensor, divide_exact

_GRAY = "(T, H, W) uint8"


def _flat_diff(prev: torch.Tensor, cur: torch.Tensor) -> torch.Tensor:
    """``(P, H, W) uint8`` × 2 → ``(P, H·W) int16`` signed difference (flat rows reduce faster)."""
    p = prev.shape[0]
    n = prev.shape[1] * prev.shape[2]
    return cur.reshape(p, n).to(torch.int16) - prev.reshape(p, n).to(torch.int16)


@dataclass(frozen=True)
class PairSignals:
    """Per consecutive pair ``(prev_i, cur_i)``: ``(P,) int64`` each.

    positive: Σ max(cur − prev, 0); absolute: Σ |cur − prev|; changed: count(|cur − prev| > τ).
    ``absolute`` is None unless requested.
    """

    positive: torch.Tensor
    changed: torch.Tensor
    absolute: torch.Tensor | None = None


def pair_signals(prev: torch.Tensor, cur: torch.Tensor, tau: int, *, absolute: bool = False) -> PairSignals:
    """Signals of the pairs ``(prev[i], cur[i])``: ``(P, H, W) uint8`` × 2 → ``PairSignals`` of ``(P,) int64``.

    The TD test is strict: a pixel counts when ``|Δ| > tau`` (τ = 25 needs a change of at least 26).
    """
    check_tensor(prev, "prev", ndim=3, dtype=torch.uint8, layout=_GRAY)
    check_tensor(cur, "cur", ndim=3, dtype=torch.uint8, layout=_GRAY)
    check_same_shape(prev, cur, "prev", "cur")
    d = _flat_diff(prev, cur)
    positive = d.clamp_min(0).sum(dim=1, dtype=torch.int64)
    mag = d.abs_()
    changed = (mag > int(tau)).sum(dim=1, dtype=torch.int64)
    abs_sum = mag.sum(dim=1, dtype=torch.int64) if absolute else None
    return PairSignals(positive=positive, changed=changed, absolute=abs_sum)


def consecutive_pair_signals(gray: torch.Tensor, tau: int, *, absolute: bool = False) -> PairSignals:
    """``(T, H, W) uint8`` → ``PairSignals`` with ``(T−1,) int64`` fields for pairs (t−1, t)."""
    check_tensor(gray, "gray", ndim=3, dtype=torch.uint8, layout=_GRAY)
    return pair_signals(gray[:-1], gray[1:], tau, absolute=absolute)


def positive_diff_sums(gray: torch.Tensor) -> torch.Tensor:
    """``(T, H, W) uint8`` → ``(T−1,) int64``: Σ_px max(g[t] − g[t−1], 0) (PADVC delta_mode "positive")."""
    check_tensor(gray, "gray", ndim=3, dtype=torch.uint8, layout=_GRAY)
    return _flat_diff(gray[:-1], gray[1:]).clamp_min_(0).sum(dim=1, dtype=torch.int64)


def absolute_diff_sums(gray: torch.Tensor) -> torch.Tensor:
    """``(T, H, W) uint8`` → ``(T−1,) int64``: Σ_px |g[t] − g[t−1]| (PADVC delta_mode "absolute")."""
    check_tensor(gray, "gray", ndim=3, dtype=torch.uint8, layout=_GRAY)
    return _flat_diff(gray[:-1], gray[1:]).abs_().sum(dim=1, dtype=torch.int64)


def changed_pixel_counts(gray: torch.Tensor, tau: int) -> torch.Tensor:
    """``(T, H, W) uint8`` → ``(T−1,) int64``: count(|g[t] − g[t−1]| > tau), strict."""
    check_tensor(gray, "gray", ndim=3, dtype=torch.uint8, layout=_GRAY)
    return (_flat_diff(gray[:-1], gray[1:]).abs_() > int(tau)).sum(dim=1, dtype=torch.int64)


def change_ratios(changed: torch.Tensor, pixels_per_frame: int) -> torch.Tensor:
    """``(P,) int64`` counts → ``(P,) float64`` ratios ``count / (H·W)`` (one IEEE division each, as Python's)."""
    check_tensor(changed, "changed", ndim=1, dtype=torch.int64, layout="(P,) int64")
    if pixels_per_frame <= 0:
        raise ValueError(f"pixels_per_frame: expected > 0, got {pixels_per_frame}")
    return divide_exact(changed.to(torch.float64), float(pixels_per_frame))
