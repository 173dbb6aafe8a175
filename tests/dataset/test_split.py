from collections import Counter

import pytest

from prism_fast.dataset.loader import Task
from prism_fast.dataset.split import stratified_subset, subset_size


def _tasks(n_en, n_zh):
    return [Task(f"E{i:05d}", "en", "", "") for i in range(n_en)] + [Task(f"Z{i:05d}", "zh", "", "") for i in range(n_zh)]


def test_sizes_per_language_match_the_paper_fraction():
    # The released counts: 5,199 en and 5,173 zh.
    chosen = stratified_subset(_tasks(5199, 5173), 0.2, seed=42)
    assert Counter(t.language for t in chosen) == {"en": 1040, "zh": 1035}
    assert subset_size(5199, 0.2) == 1040 and subset_size(5173, 0.2) == 1035
    assert len({t.id for t in chosen}) == len(chosen)


def test_deterministic_per_seed_and_order_independent():
    tasks = _tasks(300, 200)
    a = stratified_subset(tasks, 0.2, seed=7)
    b = stratified_subset(list(reversed(tasks)), 0.2, seed=7)
    c = stratified_subset(tasks, 0.2, seed=8)
    assert [t.id for t in a] == [t.id for t in b]
    assert [t.id for t in a] != [t.id for t in c]


def test_one_language_does_not_change_the_other():
    a = stratified_subset(_tasks(300, 200), 0.2, seed=1)
    b = stratified_subset(_tasks(300, 260), 0.2, seed=1)
    assert [t.id for t in a if t.language == "en"] == [t.id for t in b if t.language == "en"]


def test_small_strata_and_bounds():
    assert subset_size(0, 0.2) == 0
    assert subset_size(3, 0.2) == 1
    assert subset_size(10, 0.0) == 0
    assert subset_size(10, 1.0) == 10
    with pytest.raises(ValueError):
        subset_size(10, 1.5)
