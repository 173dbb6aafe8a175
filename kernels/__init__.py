"""prism_kernels: pure, device-agnostic tensor kernels for PRISM's video metrics.

Installed from the ``kernels/`` folder under the import name ``prism_kernels`` so that it can never be
confused with the unrelated PyPI package called ``kernels``. Nothing here imports Manim or Ray, reads
files or logs: tensors in, tensors out; device and dtype come from the inputs.

Layouts: YUV 4:2:0 planes ``(T, H, W)`` + ``(T, ⌈H/2⌉, ⌈W/2⌉)`` × 2 uint8; BGR frames ``(T, H, W, 3) uint8``;
gray frames and masks ``(T, H, W) uint8``; per-pair signals ``(T−1,) int64``; energies ``(T,) float64``;
events ``(K, 2) int64``.
"""

from .diff import (PairSignals, absolute_diff_sums, change_ratios, changed_pixel_counts,
                   consecutive_pair_signals, pair_signals, positive_diff_sums)
from .energy import (ENERGY_SCALE, abs_laplacian_sums, energy_from_sums, geo_energies, positive_delta,
                     text_energies)
from .events import EVENT_THRESHOLD_ABS, EVENT_THRESHOLD_RATIO, event_threshold, segment_events
from .gray import bgr_to_gray
from .laplacian import laplacian4
from .morphology import TEXT_DILATE, dilate
from .stream import FrameSignalStream, StreamTotals
from .yuv import BT601_LIMITED, YuvCoefficients, nv12_to_bgr, swscale_coefficients, yuv420_to_bgr

__all__ = [
    "PairSignals", "absolute_diff_sums", "change_ratios", "changed_pixel_counts", "consecutive_pair_signals",
    "pair_signals", "positive_diff_sums",
    "ENERGY_SCALE", "abs_laplacian_sums", "energy_from_sums", "geo_energies", "positive_delta", "text_energies",
    "EVENT_THRESHOLD_ABS", "EVENT_THRESHOLD_RATIO", "event_threshold", "segment_events",
    "bgr_to_gray", "laplacian4", "TEXT_DILATE", "dilate", "FrameSignalStream", "StreamTotals",
    "BT601_LIMITED", "YuvCoefficients", "nv12_to_bgr", "swscale_coefficients", "yuv420_to_bgr",
]
