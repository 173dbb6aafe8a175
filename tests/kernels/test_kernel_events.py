"""segment_events vs the spec's pseudo-code (oracle), the spec golden vector, and threshold modes."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import oracle
from prism_kernels import event_threshold, positive_diff_sums, segment_events


def test_spec_golden_events():
    # padvc.md §15: levels on a 200×300 frame → d = 600 000 at i = 5, 6, 10, 13; events (5,7), (10,11), (13,14).
    levels = [0, 0, 0, 0, 0, 0, 10, 20, 20, 20, 20, 30, 30, 30, 40]
    g = torch.tensor(levels, dtype=torch.uint8)[:, None, None].expand(-1, 200, 300).contiguous()
    d = positive_diff_sums(g)
    assert [i for i, v in enumerate(d.tolist()) if v] == [5, 6, 10, 13]
    assert set(d.tolist()) == {0, 600_000}
    ev = segment_events(d, event_threshold(d))
    assert ev.dtype == torch.int64
    assert ev.tolist() == [[5, 7], [10, 11], [13, 14]]
    mids = [(ev[k - 1, 1].item() + ev[k, 0].item()) // 2 for k in range(1, len(ev))]
    assert mids == [8, 12]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=120_000), max_size=60),
       st.sampled_from([0.0, 50_000.0, 99_999.5]))
def test_events_match_oracle(values, theta):
    got = segment_events(torch.tensor(values, dtype=torch.int64), theta).tolist()
    assert got == [list(e) for e in oracle.segment_events([float(v) for v in values], theta)]


def test_threshold_is_strict():
    d = torch.tensor([50_000, 50_001, 50_000, 50_001], dtype=torch.int64)
    assert segment_events(d, 50_000.0).tolist() == [[1, 2], [3, 4]]


def test_large_sums_are_not_compared_in_float32():
    # 2^24 + 1 is not representable in float32; a float32 comparison would call it equal to the threshold.
    d = torch.tensor([2 ** 24 + 1], dtype=torch.int64)
    assert segment_events(d, float(2 ** 24)).tolist() == [[0, 1]]


def test_ratio_mode_threshold():
    d = torch.tensor([10, 1000, 79, 81], dtype=torch.int64)
    theta = event_threshold(d, "ratio")
    assert theta == float(np.max([10.0, 1000.0, 79.0, 81.0]) * 0.08)
    assert segment_events(d, theta).tolist() == [[1, 2], [3, 4]]
    assert event_threshold(torch.zeros(0, dtype=torch.int64), "ratio") == 0.0
    with pytest.raises(ValueError, match="expected 'absolute' or 'ratio', got 'max'"):
        event_threshold(d, "max")


def test_no_pairs_no_events():
    assert segment_events(torch.zeros(0, dtype=torch.int64), 50_000.0).shape == (0, 2)
