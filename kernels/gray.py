"""Exact integer BGR → gray conversion (OpenCV's fixed-point ``COLOR_BGR2GRAY`` for uint8).

``gray = (3735·B + 19235·G + 9798·R + 16384) >> 15`` — exact for all 2^24 colours (spec padvc.md §3).
The textbook 14-bit coefficients are *not* exact, so they are never used here.
"""

from __future__ import annotations

import torch

from ._checks import check_tensor

GRAY_COEF_B = 3735
GRAY_COEF_G = 19235
GRAY_COEF_R = 9798
GRAY_SHIFT = 15
GRAY_ROUND = 1 << (GRAY_SHIFT - 1)


def bgr_to_gray(frames: torch.Tensor) -> torch.Tensor:
    """``(T, H, W, 3) uint8`` BGR → ``(T, H, W) uint8`` gray, bit-identical to ``cv2.cvtColor(BGR2GRAY)``.

    Accumulates in int32 (max 32768·255 + 16384 fits easily) one channel at a time to bound memory.
    """
    check_tensor(frames, "frames", ndim=4, dtype=torch.uint8, last_dim=3, layout="(T, H, W, 3) uint8")
    acc = frames[..., 0].to(torch.int32).mul_(GRAY_COEF_B)
    acc.add_(frames[..., 1].to(torch.int32), alpha=GRAY_COEF_G)
    acc.add_(frames[..., 2].to(torch.int32), alpha=GRAY_COEF_R)
    acc.add_(GRAY_ROUND).bitwise_right_shift_(GRAY_SHIFT)
    return acc.to(torch.uint8)
