"""Seeded, stratified subsets (the paper evaluates a 20 % subset per language)."""

from __future__ import annotations

import math
import random
from typing import Iterable

from prism_fast.dataset.loader import LANGUAGES, Task


def subset_size(n: int, fraction: float) -> int:
    """round-half-up(n × fraction), at least 1 when the stratum is non-empty and fraction > 0."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be within [0, 1], got {fraction}")
    if n == 0 or fraction == 0.0:
        return 0
    return max(1, min(n, math.floor(n * fraction + 0.5)))


def stratified_subset(tasks: Iterable[Task], fraction: float = 0.2, seed: int = 42) -> list[Task]:
    """Draw ``fraction`` of each language independently, deterministically for a given seed.

    Each stratum is sorted by id before sampling, so the draw does not depend on file order; the result is
    sorted by (language, id). The per-language generator is seeded with ``f"{seed}:{language}"`` so adding
    rows of one language never changes the other language's draw.
    """
    by_lang: dict[str, list[Task]] = {lang: [] for lang in LANGUAGES}
    for t in tasks:
        by_lang[t.language].append(t)
    chosen: list[Task] = []
    for lang in LANGUAGES:
        stratum = sorted(by_lang[lang], key=lambda t: t.id)
        k = subset_size(len(stratum), fraction)
        rng = random.Random(f"{seed}:{lang}")
        chosen.extend(sorted(rng.sample(stratum, k), key=lambda t: t.id))
    return chosen
