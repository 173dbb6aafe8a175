"""Statistics of the paper's analyses, vectorised and seeded.

All resampling uses ``numpy.random.default_rng(seed)``; the vectorised bootstrap draws its whole index
matrix in one call, which yields exactly the same numbers as a loop that draws one row of indices per
resample from the same generator (tested against such a loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float
    resamples: int
    confidence: float
    seed: int


def bootstrap_mean_ci(values, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                      chunk: int = 2_000) -> Interval:
    """Percentile bootstrap CI of the mean of ``values`` (1-D). Draws ``resamples × n`` indices in chunks
    (row-major, identical to a per-resample loop on the same generator)."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"expected a non-empty 1-D array, got shape {x.shape}")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    rng = np.random.default_rng(seed)
    n = x.size
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(x.mean()), float(low), float(high), resamples, confidence, seed)


def exec_spatial_gap(exec_success, spatial_pass, **kw) -> Interval:
    """Gap = Exec rate − Spatial rate (percentage points) over the same tasks, with a paired bootstrap CI
    (each task's difference exec − spatial is resampled)."""
    e = np.asarray(exec_success, dtype=np.float64)
    s = np.asarray(spatial_pass, dtype=np.float64)
    if e.shape != s.shape:
        raise ValueError(f"shapes differ: {e.shape} vs {s.shape}")
    iv = bootstrap_mean_ci(100.0 * (e - s), **kw)
    return iv


def quantile_bins(values, k: int) -> np.ndarray:
    """Bin index 0..k-1 by rank (ties broken by position, so bins are as equal-sized as possible)."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    bins = np.empty(x.size, dtype=np.int64)
    bins[order] = (np.arange(x.size) * k) // max(1, x.size)
    return bins


def binned_rate(values, outcome, k: int) -> list[dict]:
    """Per bin of ``values`` (deciles: k=10, quintiles: k=5): count, value range and mean outcome."""
    x = np.asarray(values, dtype=np.float64)
    y = np.asarray(outcome, dtype=np.float64)
    bins = quantile_bins(x, k)
    out = []
    for b in range(k):
        m = bins == b
        if not m.any():
            continue
        out.append({"bin": b + 1, "n": int(m.sum()), "min": float(x[m].min()), "max": float(x[m].max()),
                    "outcome_mean": float(y[m].mean())})
    return out


def pearson_r(x, y) -> float:
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.size < 2:
        raise ValueError("pearson_r needs two equal-length arrays of at least 2 values")
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den else float("nan")


def mean_of_group_means_ci(groups, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                           chunk: int = 2_000) -> Interval:
    """Percentile bootstrap CI of the unweighted mean over groups of each group's mean (e.g. the Exec→Spatial
    gap averaged over models). Each group is resampled on its own (stratified); draws are taken group after
    group from one generator, each group's ``resamples × n_g`` index matrix row-major in chunks — the same
    numbers as a loop ``for g: for r: rng.integers(0, n_g, n_g)``."""
    arrays = [np.asarray(g, dtype=np.float64) for g in groups]
    if not arrays or any(a.ndim != 1 or a.size == 0 for a in arrays):
        raise ValueError("expected a non-empty list of non-empty 1-D arrays")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples, dtype=np.float64)
    for x in arrays:
        n = x.size
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            total[start:stop] += x[idx].mean(axis=1)
    means = total / len(arrays)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    estimate = float(np.mean([a.mean() for a in arrays]))
    return Interval(estimate, float(low), float(high), resamples, confidence, seed)


def top_fraction_mask(values, fraction: float) -> np.ndarray:
    """The ``ceil(fraction × n)`` largest values (ties broken by position: earlier wins)."""
    x = np.asarray(values, dtype=np.float64)
    k = int(np.ceil(fraction * x.size))
    return top_k_mask(x, k)


def top_k_mask(values, k: int) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(-x, kind="stable")
    mask = np.zeros(x.size, dtype=bool)
    mask[order[:max(0, k)]] = True
    return mask
