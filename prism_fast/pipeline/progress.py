"""Per-stage progress bars: counts, failures and ETA (tqdm, on stderr)."""

from __future__ import annotations

import sys

from tqdm import tqdm


class StageProgress:
    def __init__(self, stage: str, total: int):
        self.failed = 0
        self.bar = tqdm(total=total, desc=f"{stage:>6}", unit="sample", file=sys.stderr, dynamic_ncols=True,
                        disable=total == 0, bar_format="{desc}: {n}/{total} {bar} [{elapsed}<{remaining}] {postfix}")

    def update(self, n: int = 1, failed: bool = False) -> None:
        if failed:
            self.failed += n
        self.bar.set_postfix_str(f"failed={self.failed}", refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()
