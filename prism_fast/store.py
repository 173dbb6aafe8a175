"""The results store: a partitioned Parquet dataset of per-sample rows, one table per funnel stage.

Layout under a run directory (see README "Run directory")::

    rows/<stage>/model=<model>/lang=<lang>/part-<ns>-<pid>-<rand>.parquet
    rows/<stage>/model=<model>/lang=<lang>/.part-<ns>-<pid>-<rand>.parquet.tag   (its integrity tag)
    integrity.key                                                                  (the run's HMAC key)

Every append writes one new file per (model, lang) group: first to a dot-prefixed temporary name in the same
directory, fsync'd, then renamed into place (``os.replace`` is atomic on POSIX). A crash mid-write therefore
leaves at most a hidden ``.part-*.tmp`` file, which every reader ignores (pyarrow skips ``.``/``_``-prefixed
files) and :meth:`ResultsStore.sweep_temporaries` removes. A part file is complete or absent — never corrupt.

Rows are validated against the stage's schema (:mod:`prism_fast.schema`): missing keys are null; an unknown key,
a value of the wrong type or a status outside the closed enum raises by default, and with
``append(..., invalid="error_row")`` (what the pipeline uses: no single row may stop a run, issue #15) turns that
row into the sample's error row instead (``error_kind="invalid_row"``, ``error_detail`` naming each bad field;
the stage's fields are dropped, so nothing unvalidated is ever counted). When a (model, lang, id) is written more than once (a retried failure), the newest row wins on read.
The dataset is plain hive-partitioned Parquet: ``pandas.read_parquet(path)`` and duckdb's
``read_parquet('rows/exec/**/*.parquet', hive_partitioning=true)`` read it directly (the tag files are hidden
from both).

Integrity (issue #13): a hostile script once wrote part files here: a passing audit row for itself and a
failure row for another sample dated ``written_at_ns = 2**62``, which won on read because the newest row
wins. Only the driver writes this store, and each part file it writes gets a hidden sidecar
``.<part>.tag`` = HMAC-SHA256(key, stage-relative path + sha256 of the file's bytes) (:mod:`prism_fast.integrity`;
the path is in the message because the partition values ``model``/``lang`` come from it). The sidecar is
written before the part file is renamed into place, so a complete part always has its tag. The key is
per run, ``<run_dir>/integrity.key`` (0600): a run directory stays self-contained (it can be moved or copied
and still verifies; reports and fits read run directories on their own) and the sandbox never shows a run
directory to a script. :meth:`ResultsStore.read` parses each file from the very bytes it verified, and
ignores — with a warning naming them, listed in :attr:`ResultsStore.ignored` and
:meth:`ResultsStore.ignored_report` for the pipeline to print —

* any file under the stage that has no valid tag (a forged or edited file, a file moved to another
  partition, every file when the run has no key: stores written before tags existed are not trusted);
* any row whose ``written_at_ns`` is more than :data:`MAX_FUTURE_NS` (5 minutes) ahead of the reader's clock:
  such a row would otherwise win the dedupe against every later retry.
"""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import quote, unquote

import pyarrow as pa
import pyarrow.parquet as pq

from prism_fast import fsutil, integrity
from prism_fast.schema import KEY_FIELDS, PARTITION_FIELDS, STATUS_VALUES, stage_schema

log = logging.getLogger(__name__)

MAX_FUTURE_NS = 5 * 60 * 1_000_000_000  # rows dated further ahead than this are ignored
TAG_KIND = "store_part"


def _encode_cell(value, typ: pa.DataType):
    """JSON-encode nested values for string columns declared as JSON (dicts, lists)."""
    if value is not None and pa.types.is_string(typ) and isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def _table(schema: pa.Schema, group: list[dict], now: int) -> pa.Table:
    columns = {}
    for name in schema.names:
        typ = schema.field(name).type
        if name == "written_at_ns":
            columns[name] = [now] * len(group)
        else:
            columns[name] = [_encode_cell(r.get(name), typ) for r in group]
    return pa.Table.from_pydict(columns, schema=schema)


def row_problems(stage: str, row: dict, schema: pa.Schema | None = None, *, cells: bool = True) -> list[str]:
    """What keeps ``row`` out of the stage's table: unknown fields, a status outside the closed enum and (with
    ``cells``) values that do not convert to their column's type. Empty when the row is valid."""
    schema = schema if schema is not None else stage_schema(stage)
    problems = []
    unknown = sorted(set(row) - set(schema.names) - set(PARTITION_FIELDS))
    if unknown:
        problems.append(f"unknown field(s) {unknown}")
    if row.get("status") is not None and row.get("status") not in STATUS_VALUES:
        problems.append(f"status {row.get('status')!r} is not one of {list(STATUS_VALUES)}")
    if cells:
        for name in schema.names:
            if name == "written_at_ns" or row.get(name) is None:
                continue
            typ = schema.field(name).type
            try:
                pa.array([_encode_cell(row[name], typ)], type=typ)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                problems.append(f"field {name!r}: {type(row[name]).__name__} value {str(row[name])[:80]!r} is not "
                                f"{typ}")
    return problems


def invalid_row(stage: str, row: dict, problems: list[str]) -> dict:
    """The sample's error row for a row that failed validation: its key, profile and fingerprints (when valid),
    ``status=error``, ``error_kind=invalid_row`` and an ``error_detail`` that names each problem and what the
    row said about itself. The stage's own fields are dropped: nothing unvalidated is ever counted."""
    said = ", ".join(f"{k}={row.get(k)!r}"[:300] for k in ("status", "error_kind", "error_detail") if row.get(k))
    detail = (f"row failed validation against prism_fast/schema.py (stage {stage!r}): {'; '.join(problems)}"
              + (f" [the row said: {said}]" if said else ""))
    out = {k: row[k] for k in (*KEY_FIELDS, "profile", "settings_sha256", "inputs_sha256")
           if isinstance(row.get(k), str)}
    out.update(status="error", error_kind="invalid_row", error_detail=detail[:4000])
    log.error("results store: %s %s/%s/%s recorded as an error row: %s", stage, out.get("model"), out.get("lang"),
              out.get("id"), detail[:1000])
    return out


def tag_path(part: Path) -> Path:
    """The hidden integrity sidecar of a part file."""
    return part.with_name(f".{part.name}.tag")


@dataclass(frozen=True)
class Ignored:
    """Something :meth:`ResultsStore.read` left out: a whole file (``ids`` empty) or rows of a file."""

    stage: str
    path: str  # relative to ``<run_dir>/rows``
    reason: str
    ids: tuple[str, ...] = ()

    def describe(self) -> str:
        what = self.path
        if self.ids:
            shown = ", ".join(self.ids[:10]) + (", …" if len(self.ids) > 10 else "")
            what = f"{len(self.ids)} row(s) of {self.path} ({shown})"
        return f"[{self.stage}] ignored {what}: {self.reason}"


class ResultsStore:
    """Append-only, crash-safe per-stage row store rooted at ``<run_dir>/rows``."""

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = Path(run_dir)
        self.root = self.run_dir / "rows"
        self._key: bytes | None = None
        self._ignored: dict[Ignored, None] = {}  # insertion-ordered set

    # -- the key -----------------------------------------------------------------------------------------
    def _write_key(self) -> bytes:
        if self._key is None:
            self._key = integrity.load_or_create_key(self.run_dir)
        return self._key

    def _read_key(self) -> bytes | None:
        """The run's key, or None when the run has none (then no file verifies); never creates one."""
        if self._key is None and (self.run_dir / integrity.KEY_NAME).exists():
            self._key = integrity.load_or_create_key(self.run_dir)
        return self._key

    def _message(self, rel: str, data: bytes) -> bytes:
        return integrity.message(TAG_KIND, path=rel, sha256=fsutil.sha256_hex(data))

    # -- writing -----------------------------------------------------------------------------------------
    def append(self, stage: str, rows: Iterable[dict], *, invalid: str = "raise") -> list[Path]:
        """Validate and append rows; returns the part files written (one per model/lang group).

        ``invalid="raise"`` (default): a row with an unknown field, a wrongly typed value or a status outside
        ``STATUS_VALUES`` raises (KeyError / TypeError). ``invalid="error_row"``: that row is replaced by
        :func:`invalid_row` (the sample's error row) and the others are written as they are. A row without its
        key fields always raises: it is nobody's row."""
        if invalid not in ("raise", "error_row"):
            raise ValueError(f"invalid={invalid!r}: expected 'raise' or 'error_row'")
        schema = stage_schema(stage)
        groups: dict[tuple[str, str], list[dict]] = {}
        for row in rows:
            missing = [k for k in KEY_FIELDS if not isinstance(row.get(k), str) or not row.get(k)]
            if missing:
                raise KeyError(f"stage {stage!r}: row lacks key field(s) {missing}: {row.get('id')!r}")
            problems = row_problems(stage, row, schema, cells=False)
            if problems:
                if invalid == "raise":
                    raise KeyError(f"stage {stage!r}: {'; '.join(problems)}; declare them in prism_fast/schema.py")
                row = invalid_row(stage, row, problems)
            groups.setdefault((row["model"], row["lang"]), []).append(row)

        written = []
        for (model, lang), group in groups.items():
            now = time.time_ns()
            try:
                table = _table(schema, group, now)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                # some value does not fit its column: find the rows (the batch as a whole is not at fault)
                fixed = []
                for r in group:
                    problems = row_problems(stage, r, schema, cells=True)
                    if problems and invalid == "raise":
                        raise TypeError(f"stage {stage!r}, id {r.get('id')!r}: {'; '.join(problems)}") from None
                    fixed.append(invalid_row(stage, r, problems) if problems else r)
                table = _table(schema, fixed, now)
            written.append(self._write_atomically(stage, model, lang, table, now))
        return written

    def _write_atomically(self, stage: str, model: str, lang: str, table: pa.Table, now: int) -> Path:
        key = self._write_key()
        part_dir = self.root / stage / f"model={quote(model, safe='')}" / f"lang={quote(lang, safe='')}"
        part_dir.mkdir(parents=True, exist_ok=True)
        name = f"part-{now:020d}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
        final = part_dir / name
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")
        data = buf.getvalue()
        rel = final.relative_to(self.root).as_posix()
        # the tag first: a part file never appears without the tag that vouches for it
        fsutil.atomic_write_text(tag_path(final), integrity.tag(key, self._message(rel, data)))
        fsutil.atomic_write_bytes(final, data, fsync_parent=True)
        return final

    def sweep_temporaries(self) -> list[Path]:
        """Delete leftovers of writers that died mid-write: hidden ``.part-*.tmp`` files, and tags whose part
        file never landed."""
        removed = []
        if self.root.exists():
            # ".part-*.tmp": a part file's temporary; "..part-*.tmp": its tag's (fsutil.temp_name of ".part-….tag")
            for pattern in (".part-*.tmp", "..part-*.tmp"):
                for tmp in self.root.rglob(pattern):
                    if tmp.exists():
                        tmp.unlink(missing_ok=True)
                        removed.append(tmp)
            for tag in self.root.rglob(".part-*.parquet.tag"):
                if not tag.with_name(tag.name[1:-len(".tag")]).exists():
                    tag.unlink(missing_ok=True)
                    removed.append(tag)
        return removed

    # -- reading -----------------------------------------------------------------------------------------
    def part_files(self, stage: str) -> list[Path]:
        base = self.root / stage
        return sorted(p for p in base.rglob("part-*.parquet")) if base.exists() else []

    @property
    def ignored(self) -> list[Ignored]:
        """Everything reads of this store left out so far (files without a valid tag, rows dated in the future)."""
        return list(self._ignored)

    def ignored_report(self, stage: str | None = None) -> list[str]:
        """One line per ignored file or group of rows (for the pipeline to print)."""
        return [i.describe() for i in self._ignored if stage is None or i.stage == stage]

    def _ignore(self, item: Ignored) -> None:
        if item not in self._ignored:
            self._ignored[item] = None
            log.warning("results store: %s", item.describe())

    def _data_files(self, base: Path) -> list[Path]:
        """Every file pyarrow would read as part of the stage's dataset (no ``.``/``_``-prefixed component)."""
        out = []
        for path in base.rglob("*"):
            rel = path.relative_to(base).parts
            if any(p.startswith((".", "_")) for p in rel) or path.is_dir():
                continue
            out.append(path)
        return sorted(out)

    def _load_verified(self, stage: str, path: Path, key: bytes | None, schema: pa.Schema) -> pa.Table | None:
        rel = path.relative_to(self.root).as_posix()
        parts = path.relative_to(self.root / stage).parts
        if len(parts) != 3 or not parts[0].startswith("model=") or not parts[1].startswith("lang="):
            self._ignore(Ignored(stage, rel, "not a model=/lang= part file"))
            return None
        try:
            data = path.read_bytes()
            tag = tag_path(path).read_text(encoding="ascii").strip() if tag_path(path).is_file() else None
        except (OSError, ValueError) as exc:
            self._ignore(Ignored(stage, rel, f"unreadable ({exc})"))
            return None
        if key is None:
            self._ignore(Ignored(stage, rel, f"the run has no {integrity.KEY_NAME}, so no file can be verified"))
            return None
        if not integrity.verify(key, self._message(rel, data), tag):
            self._ignore(Ignored(stage, rel, "no integrity tag" if tag is None else "invalid integrity tag"))
            return None
        table = pq.read_table(pa.BufferReader(data))  # the verified bytes, not the file again
        n = table.num_rows
        columns = []
        for fld in schema:
            if fld.name in table.column_names:
                col = table.column(fld.name)
                columns.append(col if col.type == fld.type else col.cast(fld.type))
            else:
                columns.append(pa.nulls(n, fld.type))
        model, lang = unquote(parts[0][len("model="):]), unquote(parts[1][len("lang="):])
        columns += [pa.array([model] * n, pa.string()), pa.array([lang] * n, pa.string())]
        table = pa.Table.from_arrays(columns, schema=schema.append(pa.field("model", pa.string()))
                                     .append(pa.field("lang", pa.string())))
        horizon = time.time_ns() + MAX_FUTURE_NS
        written = table.column("written_at_ns").to_pylist()
        future = [i for i, w in enumerate(written) if w is not None and w > horizon]
        if future:
            ids = table.column("id").to_pylist()
            self._ignore(Ignored(stage, rel, "written_at_ns more than 5 minutes in the future",
                                 tuple(str(ids[i]) for i in future)))
            drop = set(future)
            table = table.take(pa.array([i for i in range(n) if i not in drop], type=pa.int64()))
        return table

    def read(self, stage: str, *, dedupe: bool = True) -> pa.Table:
        """All rows of a stage (newest row per (model, lang, id) when ``dedupe``), sorted by key. Files without a
        valid integrity tag and rows dated in the future are left out and reported (:attr:`ignored`)."""
        schema = stage_schema(stage)
        full_schema = schema.append(pa.field("model", pa.string())).append(pa.field("lang", pa.string()))
        base = self.root / stage
        files = self._data_files(base) if base.exists() else []
        if not files:
            return full_schema.empty_table()
        key = self._read_key()
        tables = [t for t in (self._load_verified(stage, p, key, schema) for p in files) if t is not None]
        if not tables:
            return full_schema.empty_table()
        table = pa.concat_tables(tables)
        if table.num_rows == 0:
            return table
        order = [("model", "ascending"), ("lang", "ascending"), ("id", "ascending"), ("written_at_ns", "ascending")]
        table = table.sort_by(order)
        if dedupe:
            keys = list(zip(*(table.column(k).to_pylist() for k in KEY_FIELDS)))
            keep = [i for i in range(len(keys)) if i + 1 == len(keys) or keys[i + 1] != keys[i]]
            table = table.take(pa.array(keep, type=pa.int64()))
        return table

    def rows(self, stage: str, model: str | None = None) -> list[dict]:
        """The rows of :meth:`read` as dicts (key order), only ``model``'s when given."""
        rows = self.read(stage).to_pylist()
        return rows if model is None else [r for r in rows if r["model"] == model]

    def rows_by_key(self, stage: str, model: str) -> dict[tuple[str, str], dict]:
        """``model``'s rows of a stage keyed by (lang, id): how a later stage joins an earlier one's rows."""
        return {(r["lang"], r["id"]): r for r in self.rows(stage, model)}

    def read_pandas(self, stage: str):
        return self.read(stage).to_pandas()

    def done_keys(self, stage: str, *, include_failed: bool = True) -> set[tuple[str, str, str]]:
        """(model, lang, id) already present; with ``include_failed=False`` only rows with status ok."""
        table = self.read(stage)
        rows = zip(*(table.column(k).to_pylist() for k in (*KEY_FIELDS, "status")))
        return {(m, l, i) for m, l, i, s in rows if include_failed or s == "ok"}
