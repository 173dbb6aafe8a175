"""E_text and E_geo kernels vs the per-frame oracle (padvc.md §4.5, §6)."""

import cv2
import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels import (bgr_to_gray, dilate, geo_energies, positive_delta, positive_diff_sums,
                           segment_events, text_energies)


def _random_text_mask(rng, h, w, boxes):
    polys = []
    for _ in range(boxes):
        y, x = rng.integers(0, h - 10), rng.integers(0, w - 20)
        hh, ww = rng.integers(4, 12), rng.integers(8, 40)
        polys.append([[x + 0.7, y], [x + ww, y + 0.2], [x + ww, y + hh], [x, y + hh + 0.9]])
    return oracle.fill_mask((h, w), polys)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_text_energy_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    masks = np.stack([_random_text_mask(rng, 120, 160, boxes) for boxes in (0, 1, 3, 6)])
    got = text_energies(torch.from_numpy(masks))
    assert got.dtype == torch.float64
    expected = [oracle.text_energy(m) for m in masks]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=0)
    assert got.tolist() == expected   # exact: integer sums, one division


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_geo_energy_on_clip_events_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    clip = oracle.synthetic_clip(seed, frames=30)
    gray = bgr_to_gray(torch.from_numpy(clip))
    d = positive_diff_sums(gray)
    events = segment_events(d, 50_000.0)
    assert len(events) >= 1, "synthetic clip should produce events"
    s, e = events[:, 0], events[:, 1]
    text = np.stack([_random_text_mask(rng, 120, 160, 2) for _ in range(len(events))])
    dil = dilate(torch.from_numpy(text))
    got = geo_energies(gray[s], gray[e], dil)
    g = gray.numpy()
    expected = [oracle.geo_energy(g[a], g[b], oracle.dilate(text[k]))
                for k, (a, b) in enumerate(events.tolist())]
    assert got.tolist() == expected
    assert any(v > 0 for v in expected)


def test_geo_mask_excludes_only_255():
    # The toolkit keeps pixels where bitwise_not(mask) != 0, i.e. mask != 255.
    gs = np.zeros((1, 20, 20), dtype=np.uint8)
    ge = gs.copy()
    ge[0, 5:15, 5:15] = 200
    mask = np.zeros((1, 20, 20), dtype=np.uint8)
    mask[0, :, :10] = 255
    mask[0, :, 10:12] = 7
    got = geo_energies(torch.from_numpy(gs), torch.from_numpy(ge), torch.from_numpy(mask)).item()
    lap = np.abs(cv2.Laplacian(ge[0], cv2.CV_64F))
    assert got == float(lap[:, 10:].sum() / 1e5)
    assert got == oracle.geo_energy(gs[0], ge[0], mask[0])


def test_positive_delta_clamps():
    a = torch.tensor([[[10, 200]]], dtype=torch.uint8)
    b = torch.tensor([[[250, 100]]], dtype=torch.uint8)
    assert positive_delta(a, b).tolist() == [[[240, 0]]]
