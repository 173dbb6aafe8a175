"""Pair signals (positive / absolute sums, TD change counts and ratios) vs the per-pair oracle."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels import (absolute_diff_sums, bgr_to_gray, change_ratios, changed_pixel_counts,
                           consecutive_pair_signals, positive_diff_sums)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_signals_match_oracle(seed):
    clip = oracle.synthetic_clip(seed, frames=20)
    grays = [oracle.gray_cv2(f) for f in clip]
    g = torch.from_numpy(np.stack(grays))
    sig = consecutive_pair_signals(g, 25, absolute=True)
    assert sig.positive.dtype == torch.int64 and sig.positive.shape == (19,)
    assert sig.positive.tolist() == oracle.pair_series(grays, oracle.positive_diff)
    assert sig.absolute.tolist() == oracle.pair_series(grays, oracle.absolute_diff)
    assert sig.changed.tolist() == oracle.pair_series(grays, oracle.changed_count)
    assert positive_diff_sums(g).tolist() == sig.positive.tolist()
    assert absolute_diff_sums(g).tolist() == sig.absolute.tolist()
    assert changed_pixel_counts(g, 25).tolist() == sig.changed.tolist()
    ratios = change_ratios(sig.changed, g.shape[1] * g.shape[2])
    assert ratios.dtype == torch.float64
    # Same single IEEE division as the toolkit's int/int, so bit-identical (tolerance table: float64 → exact here).
    assert ratios.tolist() == oracle.pair_series(grays, oracle.change_ratio)


def test_tau_is_strict_and_sign_matters():
    a = np.zeros((1, 3, 4), dtype=np.uint8)
    b = a.copy()
    b[0, 0, 0] = 25   # |Δ| = 25: not > 25
    b[0, 0, 1] = 26   # counted
    a[0, 1, 0] = 200  # darkening by 200: counted by TD, ignored by the positive sum
    g = torch.from_numpy(np.concatenate([a, b]))
    assert changed_pixel_counts(g, 25).tolist() == [2]
    assert positive_diff_sums(g).tolist() == [51]
    assert absolute_diff_sums(g).tolist() == [251]


def test_single_frame_gives_no_pairs():
    g = bgr_to_gray(torch.from_numpy(oracle.synthetic_clip(0, frames=1)))
    assert positive_diff_sums(g).shape == (0,)
    assert changed_pixel_counts(g, 25).shape == (0,)


def test_change_ratios_rejects_bad_pixel_count():
    with pytest.raises(ValueError, match="expected > 0, got 0"):
        change_ratios(torch.zeros(3, dtype=torch.int64), 0)
