"""Rectangular dilation of uint8 masks (``cv2.dilate`` with an all-ones k×k kernel, one iteration).

The border never adds pixels (OpenCV's default dilation border value), which for uint8 equals padding
with 0. The max filter is separable, so it runs as k−1 shifted maxima per axis — exact on any device and
for any uint8 values, equivalent to ``max_pool2d(kernel=k, stride=1, padding=k//2)``.
"""

from __future__ import annotations

import torch

from ._checks import check_tensor

TEXT_DILATE = 7


def _max_shift(x: torch.Tensor, radius: int, dim: int) -> torch.Tensor:
    out = x.clone()
    n = x.shape[dim]
    for s in range(1, min(radius, n - 1) + 1):
        lo, hi = x.narrow(dim, 0, n - s), x.narrow(dim, s, n - s)
        out.narrow(dim, s, n - s).copy_(torch.maximum(out.narrow(dim, s, n - s), lo))
        out.narrow(dim, 0, n - s).copy_(torch.maximum(out.narrow(dim, 0, n - s), hi))
    return out


def dilate(mask: torch.Tensor, ksize: int = TEXT_DILATE) -> torch.Tensor:
    """``(T, H, W) uint8`` → ``(T, H, W) uint8``: max over the centred ``ksize × ksize`` window (odd ksize)."""
    check_tensor(mask, "mask", ndim=3, dtype=torch.uint8, layout="(T, H, W) uint8")
    if ksize < 1 or ksize % 2 == 0:
        raise ValueError(f"ksize: expected an odd positive integer, got {ksize}")
    r = ksize // 2
    if r == 0:
        return mask.clone()
    return _max_shift(_max_shift(mask, r, 2), r, 1)
