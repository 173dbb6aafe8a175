"""bgr_to_gray vs cv2.cvtColor and the spec's closed form, over all 2^24 colours."""

import cv2
import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels import bgr_to_gray


@pytest.fixture(scope="module")
def all_colours() -> np.ndarray:
    v = np.arange(1 << 24, dtype=np.uint32)
    bgr = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], axis=-1).astype(np.uint8)
    return bgr.reshape(1, 4096, 4096, 3)


def test_gray_all_colours_equals_cv2(all_colours):
    got = bgr_to_gray(torch.from_numpy(all_colours)).numpy()[0]
    expected = cv2.cvtColor(all_colours[0], cv2.COLOR_BGR2GRAY)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, oracle.gray_formula(all_colours[0]))


def test_textbook_14bit_formula_is_not_exact(all_colours):
    # The spec warns the 1868/9617/4899 formula differs for ~0.26% of colours; the oracle must see it.
    f = all_colours[0].astype(np.int64)
    textbook = ((1868 * f[..., 0] + 9617 * f[..., 1] + 4899 * f[..., 2] + 8192) >> 14).astype(np.uint8)
    mismatch = np.count_nonzero(textbook != cv2.cvtColor(all_colours[0], cv2.COLOR_BGR2GRAY)) / (1 << 24)
    assert 0.001 < mismatch < 0.01


def test_gray_batch_layout_and_dtype():
    clip = oracle.synthetic_clip(3, frames=5)
    got = bgr_to_gray(torch.from_numpy(clip))
    assert got.dtype == torch.uint8 and tuple(got.shape) == clip.shape[:3]
    for t in range(clip.shape[0]):
        np.testing.assert_array_equal(got[t].numpy(), oracle.gray_cv2(clip[t]))


@pytest.mark.parametrize("bad, msg", [
    (torch.zeros(2, 4, 4, dtype=torch.uint8), r"expected shape \(T, H, W, 3\).*got \(2, 4, 4\)"),
    (torch.zeros(2, 4, 4, 4, dtype=torch.uint8), r"last dim 3, got \(2, 4, 4, 4\)"),
    (torch.zeros(2, 4, 4, 3, dtype=torch.int32), r"expected dtype torch.uint8, got torch.int32"),
])
def test_gray_rejects_bad_input(bad, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        bgr_to_gray(bad)
