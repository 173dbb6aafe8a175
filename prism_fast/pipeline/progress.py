"""Per-stage progress bars: counts, failures and ETA (tqdm, on stderr). Log lines go through the bar while one is
open (``logging_redirect_tqdm``), so warnings do not break it; ``prism-fast -q`` (``PRISM_FAST_QUIET=1``) shows no
bar, only the log."""

from __future__ import annotations

import os
import sys

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

QUIET_ENV = "PRISM_FAST_QUIET"


def quiet() -> bool:
    return os.environ.get(QUIET_ENV, "") not in ("", "0")


class StageProgress:
    def __init__(self, stage: str, total: int):
        self.failed = 0
        off = total == 0 or quiet()
        self.bar = tqdm(total=total, desc=f"{stage:>6}", unit="sample", file=sys.stderr, dynamic_ncols=True,
                        disable=off, bar_format="{desc}: {n}/{total} {bar} [{elapsed}<{remaining}] {postfix}")
        # the root logger's console handlers write through the bar while it is open
        self._redirect = None if off else logging_redirect_tqdm()
        if self._redirect is not None:
            self._redirect.__enter__()

    def update(self, n: int = 1, failed: bool = False) -> None:
        if failed:
            self.failed += n
        self.bar.set_postfix_str(f"failed={self.failed}", refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()
        if self._redirect is not None:
            redirect, self._redirect = self._redirect, None
            redirect.__exit__(None, None, None)
