"""Audit-video consistency over checkpoint frames: which pixels are drawn, which drawn pixels no claimed box
explains, and how many drawn pixels each expected box holds.

Boxes are integer pixel rectangles ``(x0, y0, x1, y1)``, half-open (``x0 <= x < x1``), already clipped to the
frame, each tagged with the frame it belongs to. Counts are exact integers (int64) on any device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_tensor

_BGR = "(S, H, W, 3) uint8"


def drawn_mask(frames: torch.Tensor, background: torch.Tensor, threshold: int) -> torch.Tensor:
    """``(S, H, W) bool``: a pixel is drawn when some channel differs from its frame's background colour
    (``(S, 3)`` integers in the frames' channel order) by more than ``threshold``."""
    check_tensor(frames, "frames", ndim=4, dtype=torch.uint8, layout=_BGR)
    bg = background.to(device=frames.device, dtype=torch.int16).reshape(-1, 1, 1, 3)
    return ((frames.to(torch.int16) - bg).abs_().amax(dim=3) > int(threshold))


def changed_mask(prev: torch.Tensor, cur: torch.Tensor, threshold: int) -> torch.Tensor:
    """``(S, H, W) bool``: some channel changed by more than ``threshold`` between ``prev`` and ``cur``."""
    check_tensor(prev, "prev", ndim=4, dtype=torch.uint8, layout=_BGR)
    check_tensor(cur, "cur", ndim=4, dtype=torch.uint8, layout=_BGR)
    return (cur.to(torch.int16) - prev.to(torch.int16)).abs_().amax(dim=3) > int(threshold)


def paint_boxes(boxes: torch.Tensor, frame_of: torch.Tensor, shape: tuple) -> torch.Tensor:
    """``(S, H, W) bool``: the union of ``boxes`` (``(B, 4) int64``) on frame ``frame_of`` (``(B,) int64``), by a
    2-D difference image and two cumulative sums (no loop over boxes)."""
    s, h, w = shape
    diff = torch.zeros((s, h + 1, w + 1), dtype=torch.int32, device=boxes.device)
    if boxes.numel():
        b = boxes.to(torch.int64)
        f = frame_of.to(torch.int64)
        keep = (b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1])
        b, f = b[keep], f[keep]
        flat = diff.view(-1)
        stride_s, stride_y = (h + 1) * (w + 1), w + 1
        for dy, dx, sign in ((1, 0, 1), (3, 2, 1), (1, 2, -1), (3, 0, -1)):  # (y0,x0)+ (y1,x1)+ (y0,x1)- (y1,x0)-
            idx = f * stride_s + b[:, dy] * stride_y + b[:, dx]
            flat.index_add_(0, idx, torch.full_like(idx, sign, dtype=torch.int32))
    return diff.cumsum(dim=1).cumsum(dim=2)[:, :h, :w] > 0


def box_counts(mask: torch.Tensor, boxes: torch.Tensor, frame_of: torch.Tensor) -> torch.Tensor:
    """``(B,) int64``: the set pixels of ``mask`` (``(S, H, W) bool``) inside each box, by an integral image."""
    s, h, w = mask.shape
    if boxes.numel() == 0:
        return torch.zeros(0, dtype=torch.int64, device=mask.device)
    integral = torch.zeros((s, h + 1, w + 1), dtype=torch.int64, device=mask.device)
    integral[:, 1:, 1:] = mask.to(torch.int64).cumsum(dim=1).cumsum(dim=2)
    b = boxes.to(torch.int64)
    f = frame_of.to(torch.int64)
    x0, y0 = b[:, 0], b[:, 1]
    x1, y1 = torch.maximum(b[:, 2], x0), torch.maximum(b[:, 3], y0)
    return integral[f, y1, x1] - integral[f, y0, x1] - integral[f, y1, x0] + integral[f, y0, x0]


@dataclass(frozen=True)
class WitnessCounts:
    """Per checked frame ``(S,) int64``: drawn pixels and drawn pixels nothing explains; per expected box
    ``(E,) int64``: drawn or changing pixels inside it."""

    drawn: torch.Tensor
    unexplained: torch.Tensor
    expected: torch.Tensor


def witness_counts(frames: torch.Tensor, previous: torch.Tensor, background: torch.Tensor, threshold: int,
                   explained: torch.Tensor, explained_frame: torch.Tensor, expected: torch.Tensor,
                   expected_frame: torch.Tensor) -> WitnessCounts:
    """The checkpoint frames ``frames`` and the frames before them ``previous`` (``(S, H, W, 3) uint8``): a drawn
    pixel is explained by a box of ``explained`` or by changing since the previous frame (content in motion at
    the checkpoint); an ``expected`` box counts drawn or changing pixels."""
    drawn = drawn_mask(frames, background, threshold)
    moving = changed_mask(previous, frames, threshold)
    covered = paint_boxes(explained, explained_frame, tuple(drawn.shape)) | moving
    unexplained = (drawn & ~covered).flatten(1).sum(dim=1, dtype=torch.int64)
    held = box_counts(drawn | moving, expected, expected_frame)
    return WitnessCounts(drawn=drawn.flatten(1).sum(dim=1, dtype=torch.int64), unexplained=unexplained,
                         expected=held)


__all__ = ["WitnessCounts", "box_counts", "changed_mask", "drawn_mask", "paint_boxes", "witness_counts"]
