"""Event segmentation of the frame-difference signal as vectorised run detection.

Spec padvc.md §5: pairs i = 0..N−2 with ``d_i > θ`` (strict) form maximal runs; a run starting at pair s
and ending before pair i (the first pair with ``d_i <= θ``) is the event ``(s, i)``; a run reaching the last
pair ends at frame N−1. So s is the last frame before the change and e the first frame after it.
"""

from __future__ import annotations

import torch

from ._checks import check_tensor

EVENT_THRESHOLD_ABS = 50_000.0
EVENT_THRESHOLD_RATIO = 0.08


def event_threshold(diffs: torch.Tensor, mode: str = "absolute", *, absolute: float = EVENT_THRESHOLD_ABS,
                    ratio: float = EVENT_THRESHOLD_RATIO) -> float:
    """θ for ``(P,)`` diffs: ``absolute`` → the constant; ``ratio`` → ``max(d) · ratio`` (0.0 if no pairs)."""
    check_tensor(diffs, "diffs", ndim=1, layout="(P,)")
    if mode == "absolute":
        return float(absolute)
    if mode == "ratio":
        if diffs.numel() == 0:
            return 0.0
        return float(diffs.max().to(torch.float64).item()) * float(ratio)
    raise ValueError(f"mode: expected 'absolute' or 'ratio', got {mode!r}")


def segment_events(diffs: torch.Tensor, threshold: float) -> torch.Tensor:
    """``(P,)`` diff signal (P = N−1 pairs) → ``(K, 2) int64`` events ``[s_k, e_k]`` in frame indices.

    The comparison is done in float64 (exact for integer sums below 2^53), never in float32.
    """
    check_tensor(diffs, "diffs", ndim=1, layout="(P,)")
    above = diffs.to(torch.float64) > float(threshold)
    pad = torch.zeros(1, dtype=torch.bool, device=diffs.device)
    flags = torch.cat([pad, above, pad])
    # Rising edges at even positions of the edge list, falling edges at odd ones; a falling edge at
    # position i means pair i is the first pair at or below θ (or i = P = N−1 at the end of the video).
    edges = torch.nonzero(flags[1:] != flags[:-1]).flatten()
    return torch.stack([edges[0::2], edges[1::2]], dim=1).to(torch.int64)
