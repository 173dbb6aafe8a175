import numpy as np
import pytest

from prism_fast.report.stats import bootstrap_mean_ci, binned_rate, exec_spatial_gap, pearson_r, quantile_bins


def _slow_bootstrap(x, resamples, confidence, seed):
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):  # one resample at a time, the obvious way
        idx = rng.integers(0, len(x), size=(1, len(x)))[0]
        means.append(sum(x[i] for i in idx) / len(x))
    a = (1 - confidence) / 2
    return np.quantile(np.array(means), [a, 1 - a])


def test_vectorised_bootstrap_equals_slow_loop():
    x = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1], dtype=float)
    iv = bootstrap_mean_ci(x, resamples=3_000, confidence=0.95, seed=123, chunk=700)
    lo, hi = _slow_bootstrap(x, 3_000, 0.95, 123)
    assert (iv.low, iv.high) == pytest.approx((lo, hi), rel=1e-12)
    assert iv.estimate == pytest.approx(x.mean())
    again = bootstrap_mean_ci(x, resamples=3_000, seed=123)
    assert (again.low, again.high) == (iv.low, iv.high)


def test_gap_is_paired_difference_in_points():
    e = [1, 1, 1, 1, 0, 1, 1, 1]
    s = [1, 0, 0, 1, 0, 1, 0, 0]
    iv = exec_spatial_gap(e, s, resamples=10_000, seed=0)
    assert iv.estimate == pytest.approx(100 * (7 / 8 - 3 / 8))
    assert iv.low <= iv.estimate <= iv.high
    with pytest.raises(ValueError):
        exec_spatial_gap([1, 0], [1])


def test_bins_and_rates_by_hand():
    x = [5, 1, 4, 2, 3, 10, 8, 9, 7, 6]
    assert list(quantile_bins(x, 5)) == [2, 0, 1, 0, 1, 4, 3, 4, 3, 2]
    rates = binned_rate(x, [1, 0, 0, 0, 1, 1, 1, 0, 1, 1], 5)
    assert [r["n"] for r in rates] == [2] * 5
    assert [r["outcome_mean"] for r in rates] == [0.0, 0.5, 1.0, 1.0, 0.5]
    assert rates[0]["min"] == 1 and rates[4]["max"] == 10


def test_pearson_matches_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=50), rng.normal(size=50)
    assert pearson_r(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1], rel=1e-12)
