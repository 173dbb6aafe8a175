"""Boundary checks for kernel inputs: one call per argument, messages say *expected vs got*."""

from __future__ import annotations

import torch


def check_tensor(x: object, name: str, *, ndim: int, dtype: torch.dtype | None = None,
                 last_dim: int | None = None, layout: str = "") -> None:
    """Raise ``TypeError``/``ValueError`` unless ``x`` is a tensor of ``ndim`` dims (and dtype / last dim).

    ``layout`` is the human-readable layout used in messages, e.g. ``"(T, H, W, 3)"``.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor {layout}, got {type(x).__name__}")
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected shape {layout} ({ndim} dims), got {tuple(x.shape)}")
    if last_dim is not None and x.shape[-1] != last_dim:
        raise ValueError(f"{name}: expected shape {layout} with last dim {last_dim}, got {tuple(x.shape)}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {x.dtype}")


def check_same_shape(a: torch.Tensor, b: torch.Tensor, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_b}: expected the shape of {name_a} {tuple(a.shape)}, got {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"{name_b}: expected device {a.device} (as {name_a}), got {b.device}")


def check_min_size(x: torch.Tensor, name: str, *, height: int = 1, width: int = 1) -> None:
    h, w = x.shape[-2], x.shape[-1]
    if h < height or w < width:
        raise ValueError(f"{name}: expected H >= {height} and W >= {width}, got H={h}, W={w}")


def divide_exact(x: torch.Tensor, divisor: float) -> torch.Tensor:
    """``x / divisor`` in ``x``'s floating dtype, correctly rounded (IEEE) on every device.

    On CUDA, PyTorch turns a division by a Python number (or a CPU scalar tensor) into a multiplication by the
    divisor's reciprocal, which can be one ulp off the quotient (e.g. 258315 / 1e5); the CPU divides. A divisor
    held in a tensor on ``x``'s device takes the elementwise division path on both, so both give Python's
    ``a / b``.
    """
    return torch.div(x, torch.full((), float(divisor), dtype=x.dtype, device=x.device))
