"""dilate vs cv2.dilate (7×7 ones, default border) and max_pool2d."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import oracle
from prism_kernels import dilate


@pytest.mark.parametrize("density", [0.0, 0.002, 0.05])
def test_dilate_binary_masks_match_cv2(density):
    rng = np.random.default_rng(int(density * 1000))
    m = ((rng.random((3, 50, 70)) < density) * 255).astype(np.uint8)
    m[1, 0, 0] = 255 if density else 0   # a border pixel: the border must not add or drop pixels
    got = dilate(torch.from_numpy(m)).numpy()
    for t in range(3):
        np.testing.assert_array_equal(got[t], oracle.dilate(m[t]))
    pooled = F.max_pool2d(torch.from_numpy(m).float()[:, None], 7, 1, 3)[:, 0].to(torch.uint8).numpy()
    np.testing.assert_array_equal(got, pooled)


def test_dilate_grows_box_by_three_each_side():
    m = np.zeros((1, 40, 40), dtype=np.uint8)
    m[0, 10:20, 15:25] = 255
    got = dilate(torch.from_numpy(m)).numpy()[0]
    expected = np.zeros((40, 40), dtype=np.uint8)
    expected[7:23, 12:28] = 255
    np.testing.assert_array_equal(got, expected)


def test_dilate_grey_values_and_other_sizes():
    rng = np.random.default_rng(5)
    m = rng.integers(0, 256, size=(2, 9, 11), dtype=np.uint8)
    for k in (1, 3, 7, 13):
        got = dilate(torch.from_numpy(m), k).numpy()
        for t in range(2):
            np.testing.assert_array_equal(got[t], oracle.dilate(m[t], k))
    with pytest.raises(ValueError, match="odd positive integer, got 4"):
        dilate(torch.from_numpy(m), 4)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.sampled_from([1, 3, 5, 7, 9]), st.integers(0, 2 ** 32 - 1))
def test_dilate_any_size_matches_cv2(h, w, k, seed):
    m = np.random.default_rng(seed).integers(0, 256, size=(1, h, w), dtype=np.uint8)
    np.testing.assert_array_equal(dilate(torch.from_numpy(m), k).numpy()[0], oracle.dilate(m[0], k))
