"""Laplacian energy sums used by PADVC (spec padvc.md §4.5, §6), reduced exactly in int64.

The toolkit sums float64 per-pixel |L| values, all integers ≤ 1020, over ≤ 2^53 — so its float64 sums
are exact integers and an int64 reduction followed by one float64 division by 1e5 is bit-identical.
"""

from __future__ import annotations

import torch

from ._checks import check_same_shape, check_tensor, divide_exact
from .laplacian import laplacian4

ENERGY_SCALE = 1e5
MASK_ON = 255


def abs_laplacian_sums(x: torch.Tensor, text_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``(T, H, W)`` integer → ``(T,) int64``: Σ |L(x)| over the pixels where ``text_mask != 255``.

    ``text_mask`` (``(T, H, W) uint8``, optional) excludes the text: the toolkit keeps the pixels where
    ``bitwise_not(text_mask) != 0``, i.e. ``text_mask != 255``. Without a mask every pixel counts.
    The Laplacian is taken over the whole image before masking.
    """
    lap = laplacian4(x).abs_()
    if text_mask is not None:
        check_tensor(text_mask, "text_mask", ndim=3, dtype=torch.uint8, layout="(T, H, W) uint8")
        check_same_shape(x, text_mask, "x", "text_mask")
        lap.masked_fill_(text_mask == MASK_ON, 0)
    return lap.sum(dim=(1, 2), dtype=torch.int64)


def energy_from_sums(sums: torch.Tensor) -> torch.Tensor:
    """``(T,) int64`` → ``(T,) float64`` energies ``sum / 1e5`` (one IEEE division, as the toolkit's)."""
    check_tensor(sums, "sums", ndim=1, dtype=torch.int64, layout="(T,) int64")
    return divide_exact(sums.to(torch.float64), ENERGY_SCALE)


def positive_delta(gray_start: torch.Tensor, gray_end: torch.Tensor) -> torch.Tensor:
    """``(K, H, W) uint8`` × 2 → ``(K, H, W) uint8``: ``max(g_end − g_start, 0)`` per event endpoint pair."""
    check_tensor(gray_start, "gray_start", ndim=3, dtype=torch.uint8, layout="(K, H, W) uint8")
    check_tensor(gray_end, "gray_end", ndim=3, dtype=torch.uint8, layout="(K, H, W) uint8")
    check_same_shape(gray_start, gray_end, "gray_start", "gray_end")
    return (gray_end.to(torch.int16) - gray_start.to(torch.int16)).clamp_min_(0).to(torch.uint8)


def text_energies(masks: torch.Tensor) -> torch.Tensor:
    """E_text: ``(T, H, W) uint8`` undilated 0/255 OCR masks → ``(T,) float64`` Σ|L(M)| / 1e5."""
    check_tensor(masks, "masks", ndim=3, dtype=torch.uint8, layout="(T, H, W) uint8")
    return energy_from_sums(abs_laplacian_sums(masks))


def geo_energies(gray_start: torch.Tensor, gray_end: torch.Tensor, dilated_text_mask: torch.Tensor) -> torch.Tensor:
    """E_geo per event: ``(K, H, W) uint8`` start/end gray frames and the *dilated* OCR mask of the end
    frame → ``(K,) float64`` Σ_{mask ≠ 255} |L(max(g_e − g_s, 0))| / 1e5."""
    return energy_from_sums(abs_laplacian_sums(positive_delta(gray_start, gray_end), dilated_text_mask))
