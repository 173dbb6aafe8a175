"""laplacian4 vs cv2.Laplacian(ksize=1) and the spec's |Laplacian| goldens."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import oracle
from prism_kernels import abs_laplacian_sums, laplacian4, text_energies


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (7, 4), (48, 85)])
def test_laplacian_matches_cv2(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(0, 256, size=(3, *shape), dtype=np.uint8)
    got = laplacian4(torch.from_numpy(x))
    assert got.dtype == torch.int32
    for t in range(3):
        np.testing.assert_array_equal(got[t].numpy().astype(np.float64), oracle.laplacian(x[t]))


def _mask(slices):
    m = np.zeros((480, 854), dtype=np.uint8)
    m[slices] = 255
    return m


@pytest.mark.parametrize("slices, expected", [
    ((slice(100, 150), slice(100, 200)), 1.53),   # padvc.md §15: filled rectangle (100,100)–(199,149)
    ((slice(0, 50), slice(0, 100)), 0.765),       # corner rectangle loses two sides
    ((slice(240, 241), slice(400, 401)), 0.0204),  # one pixel
])
def test_spec_text_energy_goldens(slices, expected):
    m = _mask(slices)
    got = text_energies(torch.from_numpy(m)[None]).item()
    assert got == oracle.text_energy(m)
    assert got == pytest.approx(expected, rel=1e-12)


def test_closed_form_510_per_boundary_pair():
    # padvc.md §4.5: for a binary mask away from the border Σ|L| = 510 × (4-adjacent inside/outside pairs).
    rng = np.random.default_rng(7)
    m = (rng.random((60, 90)) < 0.3).astype(np.uint8) * 255
    m[:2, :] = m[-2:, :] = 0   # the closed form holds away from the border (reflect-101 doubles edge pairs)
    m[:, :2] = m[:, -2:] = 0
    b = m > 0
    pairs = np.count_nonzero(b[1:, :] != b[:-1, :]) + np.count_nonzero(b[:, 1:] != b[:, :-1])
    assert abs_laplacian_sums(torch.from_numpy(m)[None]).item() == 510 * pairs


def test_laplacian_rejects_float_and_tiny():
    with pytest.raises(TypeError, match="expected an integer dtype"):
        laplacian4(torch.zeros(1, 4, 4))
    with pytest.raises(ValueError, match="expected H >= 2 and W >= 2, got H=1, W=4"):
        laplacian4(torch.zeros(1, 1, 4, dtype=torch.uint8))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12), st.integers(2, 12), st.integers(0, 2 ** 32 - 1))
def test_laplacian_any_size_matches_cv2(h, w, seed):
    x = np.random.default_rng(seed).integers(0, 256, size=(1, h, w), dtype=np.uint8)
    np.testing.assert_array_equal(laplacian4(torch.from_numpy(x)).numpy()[0].astype(np.float64), oracle.laplacian(x[0]))
