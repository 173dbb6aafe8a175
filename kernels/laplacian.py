"""4-neighbour Laplacian with reflect-101 borders (``cv2.Laplacian(ksize=1)``), exact in integers.

Kernel ``[[0, 1, 0], [1, −4, 1], [0, 1, 0]]``; border BORDER_REFLECT_101 (row −1 reads row 1, the edge
pixel is not repeated). kornia's Laplacian is the 8-neighbour normalised one, so it is not used.
"""

from __future__ import annotations

import torch

from ._checks import check_min_size, check_tensor


def laplacian4(x: torch.Tensor) -> torch.Tensor:
    """``(T, H, W)`` integer (uint8/int16/int32) → ``(T, H, W) int32`` Laplacian. Needs H, W ≥ 2."""
    check_tensor(x, "x", ndim=3, layout="(T, H, W) integer")
    if x.dtype.is_floating_point or x.dtype == torch.bool:
        raise TypeError(f"x: expected an integer dtype (uint8/int16/int32), got {x.dtype}")
    check_min_size(x, "x", height=2, width=2)
    v = x.to(torch.int32)
    out = v * -4
    out[:, 1:, :] += v[:, :-1, :]   # north neighbour
    out[:, 0, :] += v[:, 1, :]      # reflect-101: row −1 → row 1
    out[:, :-1, :] += v[:, 1:, :]   # south neighbour
    out[:, -1, :] += v[:, -2, :]    # row H → row H−2
    out[:, :, 1:] += v[:, :, :-1]   # west
    out[:, :, 0] += v[:, :, 1]
    out[:, :, :-1] += v[:, :, 1:]   # east
    out[:, :, -1] += v[:, :, -2]
    return out
