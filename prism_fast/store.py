"""The results store: a partitioned Parquet dataset of per-sample rows, one table per funnel stage.

Layout under a run directory (see README "Run directory")::

    rows/<stage>/model=<model>/lang=<lang>/part-<ns>-<pid>-<rand>.parquet

Every append writes one new file per (model, lang) group: first to a dot-prefixed temporary name in the same
directory, fsync'd, then renamed into place (``os.replace`` is atomic on POSIX). A crash mid-write therefore
leaves at most a hidden ``.part-*.tmp`` file, which every reader ignores (pyarrow skips ``.``/``_``-prefixed
files) and :meth:`ResultsStore.sweep_temporaries` removes. A part file is complete or absent — never corrupt.

Rows are validated against the stage's schema (:mod:`prism_fast.schema`): unknown keys raise, missing keys are
null. When a (model, lang, id) is written more than once (a retried failure), the newest row wins on read.
The dataset is plain hive-partitioned Parquet: ``pandas.read_parquet(path)`` and duckdb's
``read_parquet('rows/exec/**/*.parquet', hive_partitioning=true)`` read it directly.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from prism_fast.schema import KEY_FIELDS, PARTITION_FIELDS, stage_schema


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode_cell(value, typ: pa.DataType):
    """JSON-encode nested values for string columns declared as JSON (dicts, lists)."""
    if value is not None and pa.types.is_string(typ) and isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


class ResultsStore:
    """Append-only, crash-safe per-stage row store rooted at ``<run_dir>/rows``."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / "rows"

    # -- writing -----------------------------------------------------------------------------------------
    def append(self, stage: str, rows: Iterable[dict]) -> list[Path]:
        """Validate and append rows; returns the part files written (one per model/lang group)."""
        schema = stage_schema(stage)
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in rows:
            unknown = set(row) - set(schema.names) - set(PARTITION_FIELDS)
            if unknown:
                raise KeyError(f"stage {stage!r}: unknown field(s) {sorted(unknown)}; declare them in prism_fast/schema.py")
            missing = [k for k in ("model", "lang", "id") if not row.get(k)]
            if missing:
                raise KeyError(f"stage {stage!r}: row lacks key field(s) {missing}: {row.get('id')!r}")
            groups.setdefault((row["model"], row["lang"]), []).append(row)

        written = []
        for (model, lang), group in groups.items():
            now = time.time_ns()
            columns = {}
            for name in schema.names:
                typ = schema.field(name).type
                if name == "written_at_ns":
                    columns[name] = [now] * len(group)
                else:
                    columns[name] = [_encode_cell(r.get(name), typ) for r in group]
            table = pa.Table.from_pydict(columns, schema=schema)
            written.append(self._write_atomically(stage, model, lang, table, now))
        return written

    def _write_atomically(self, stage: str, model: str, lang: str, table: pa.Table, now: int) -> Path:
        part_dir = self.root / stage / f"model={quote(model, safe='')}" / f"lang={quote(lang, safe='')}"
        part_dir.mkdir(parents=True, exist_ok=True)
        name = f"part-{now:020d}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
        tmp = part_dir / f".{name}.tmp"
        final = part_dir / name
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        _fsync_dir(part_dir)
        return final

    def sweep_temporaries(self) -> list[Path]:
        """Delete leftovers of writers that died mid-write (hidden ``.part-*.tmp`` files)."""
        removed = []
        if self.root.exists():
            for tmp in self.root.rglob(".part-*.tmp"):
                tmp.unlink(missing_ok=True)
                removed.append(tmp)
        return removed

    # -- reading -----------------------------------------------------------------------------------------
    def part_files(self, stage: str) -> list[Path]:
        base = self.root / stage
        return sorted(p for p in base.rglob("part-*.parquet")) if base.exists() else []

    def read(self, stage: str, *, dedupe: bool = True) -> pa.Table:
        """All rows of a stage (newest row per (model, lang, id) when ``dedupe``), sorted by key."""
        schema = stage_schema(stage)
        full_schema = schema.append(pa.field("model", pa.string())).append(pa.field("lang", pa.string()))
        base = self.root / stage
        if not self.part_files(stage):
            return full_schema.empty_table()
        dataset = pads.dataset(base, format="parquet", schema=full_schema, partitioning="hive")
        table = dataset.to_table()
        if table.num_rows == 0:
            return table
        order = [("model", "ascending"), ("lang", "ascending"), ("id", "ascending"), ("written_at_ns", "ascending")]
        table = table.sort_by(order)
        if dedupe:
            keys = list(zip(*(table.column(k).to_pylist() for k in KEY_FIELDS)))
            keep = [i for i in range(len(keys)) if i + 1 == len(keys) or keys[i + 1] != keys[i]]
            table = table.take(pa.array(keep, type=pa.int64()))
        return table

    def read_pandas(self, stage: str):
        return self.read(stage).to_pandas()

    def done_keys(self, stage: str, *, include_failed: bool = True) -> set[tuple[str, str, str]]:
        """(model, lang, id) already present; with ``include_failed=False`` only rows with status ok."""
        table = self.read(stage)
        rows = zip(*(table.column(k).to_pylist() for k in (*KEY_FIELDS, "status")))
        return {(m, l, i) for m, l, i, s in rows if include_failed or s == "ok"}
