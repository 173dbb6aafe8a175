"""prism_kernels.witness against the pixel-by-pixel oracle (bench/oracle.py witness_frame), on CPU and CUDA."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels.witness import box_counts, paint_boxes, witness_counts

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


def _case(seed: int, s: int = 3, h: int = 23, w: int = 31):
    rng = np.random.default_rng(seed)
    frames = np.zeros((s, h, w, 3), dtype=np.uint8)
    bgs = rng.integers(0, 256, size=(s, 3))
    for k in range(s):
        frames[k] = bgs[k]
        for _ in range(4):  # a few drawn rectangles, some overlapping the picture's edge
            x0, y0 = rng.integers(-4, w), rng.integers(-4, h)
            frames[k, max(y0, 0):y0 + rng.integers(1, 9), max(x0, 0):x0 + rng.integers(1, 12)] = rng.integers(0, 256, 3)
        frames[k] = np.clip(frames[k].astype(int) + rng.integers(-45, 46, size=(h, w, 3)) * (rng.random((h, w, 1)) < 0.1),
                            0, 255).astype(np.uint8)  # noise near the threshold
    prev = frames.copy()
    prev[:, rng.random((h, w)) < 0.15] = rng.integers(0, 256, 3)  # some pixels changed since the previous frame

    def boxes(n):
        out = []
        for _ in range(n):
            x0, y0 = int(rng.integers(0, w)), int(rng.integers(0, h))
            out.append([x0, y0, int(min(w, x0 + rng.integers(0, 14))), int(min(h, y0 + rng.integers(0, 10)))])
        return out

    explained = [(k, b) for k in range(s) for b in boxes(int(rng.integers(0, 6)))]
    expected = [(k, b) for k in range(s) for b in boxes(int(rng.integers(0, 5)))]
    return frames, prev, bgs, explained, expected


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(6))
def test_witness_counts_match_the_per_pixel_oracle(seed, device):
    frames, prev, bgs, explained, expected = _case(seed)
    threshold = 40

    def t(rows, width):
        return torch.tensor(rows, dtype=torch.int64, device=device).reshape(-1, width)

    got = witness_counts(torch.from_numpy(frames).to(device), torch.from_numpy(prev).to(device),
                         t(bgs.tolist(), 3), threshold, t([b for _, b in explained], 4),
                         t([k for k, _ in explained], 1).reshape(-1), t([b for _, b in expected], 4),
                         t([k for k, _ in expected], 1).reshape(-1))
    held_all = []
    for k in range(frames.shape[0]):
        d, u, held = oracle.witness_frame(frames[k], prev[k], tuple(bgs[k]), threshold,
                                          [b for j, b in explained if j == k], [b for j, b in expected if j == k])
        assert (int(got.drawn[k]), int(got.unexplained[k])) == (d, u)
        held_all.append(held)
    want = [None] * len(expected)
    seen = {k: 0 for k in range(frames.shape[0])}
    for i, (k, _) in enumerate(expected):
        want[i] = held_all[k][seen[k]]
        seen[k] += 1
    assert got.expected.cpu().tolist() == want
    assert got.drawn.device.type == device


def test_paint_and_count_empty_and_degenerate_boxes():
    mask = paint_boxes(torch.tensor([[2, 2, 2, 5], [0, 0, 3, 1]]), torch.tensor([0, 0]), (1, 4, 6))
    want = np.zeros((1, 4, 6), dtype=bool)
    want[0, 0, :3] = True  # the zero-width box paints nothing
    np.testing.assert_array_equal(mask.numpy(), want)
    full = torch.ones((2, 4, 6), dtype=torch.bool)
    counts = box_counts(full, torch.tensor([[0, 0, 6, 4], [1, 1, 1, 3], [5, 3, 6, 4]]), torch.tensor([1, 0, 0]))
    assert counts.tolist() == [24, 0, 1]
    assert box_counts(full, torch.zeros((0, 4), dtype=torch.int64), torch.zeros(0, dtype=torch.int64)).numel() == 0
