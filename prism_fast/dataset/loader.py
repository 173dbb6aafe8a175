"""Loader for the released PRISM dataset schema (``id``, ``language``, ``instruction``, ``reference_answer``).

Reads JSONL or Parquet and validates every record. Each problem is reported with the file and line (or
Parquet row) that caused it. With ``strict=True`` (default) any problem raises :class:`DatasetError` listing
all of them; with ``strict=False`` bad records are skipped and returned in :attr:`LoadResult.issues`, so a
caller can store them — they are never dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

LANGUAGES = ("en", "zh")
REQUIRED_FIELDS = ("id", "language", "instruction", "reference_answer")


@dataclass(frozen=True)
class Task:
    """One benchmark task (one dataset row)."""

    id: str
    language: str
    instruction: str
    reference_answer: str
    source: str = ""  # "<file>:<line>" the row came from

    def to_record(self) -> dict:
        return {f: getattr(self, f) for f in REQUIRED_FIELDS}


@dataclass(frozen=True)
class LoadIssue:
    """A record that failed validation."""

    path: str
    line: int  # 1-based line (JSONL) or row (Parquet)
    # non_utf8 | malformed_json | not_object | missing_field | bad_type | unsafe_id | unknown_language | duplicate_id
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.message}"


class DatasetError(ValueError):
    """Raised in strict mode; ``issues`` lists every problem found in the file."""

    def __init__(self, issues: list[LoadIssue]):
        self.issues = issues
        shown = "\n  ".join(str(i) for i in issues[:20])
        more = f"\n  ... and {len(issues) - 20} more" if len(issues) > 20 else ""
        super().__init__(f"{len(issues)} invalid record(s):\n  {shown}{more}")


@dataclass
class LoadResult:
    path: str
    tasks: list[Task] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=list)

    def by_language(self) -> dict[str, int]:
        counts = {lang: 0 for lang in LANGUAGES}
        for t in self.tasks:
            counts[t.language] += 1
        return counts


def _raw_jsonl_records(path: Path) -> Iterator[tuple[int, object, LoadIssue | None]]:
    data = path.read_bytes()
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue  # blank lines (e.g. the trailing newline) are not records
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield lineno, None, LoadIssue(str(path), lineno, "non_utf8", f"not valid UTF-8 at byte {exc.start}")
            continue
        try:
            yield lineno, json.loads(text), None
        except json.JSONDecodeError as exc:
            yield lineno, None, LoadIssue(str(path), lineno, "malformed_json", f"{exc.msg} (column {exc.colno})")


def _raw_parquet_records(path: Path) -> Iterator[tuple[int, object, LoadIssue | None]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = [f for f in REQUIRED_FIELDS if f not in table.column_names]
    if missing:
        yield 0, None, LoadIssue(str(path), 0, "missing_field", f"Parquet file lacks column(s) {missing}")
        return
    for rowno, record in enumerate(table.to_pylist(), start=1):
        yield rowno, record, None


def _validate(path: Path, lineno: int, record: object, seen: dict[str, int]) -> tuple[Task | None, LoadIssue | None]:
    def issue(kind: str, msg: str) -> tuple[None, LoadIssue]:
        return None, LoadIssue(str(path), lineno, kind, msg)

    if not isinstance(record, dict):
        return issue("not_object", f"expected a JSON object, got {type(record).__name__}")
    missing = [f for f in REQUIRED_FIELDS if f not in record or record[f] is None]
    if missing:
        return issue("missing_field", f"missing field(s) {missing}")
    for f in REQUIRED_FIELDS:
        if not isinstance(record[f], str):
            return issue("bad_type", f"field {f!r} must be a string, got {type(record[f]).__name__}")
    if not record["id"].strip():
        return issue("bad_type", "field 'id' is empty")
    if record["id"] in (".", "..") or any(c in record["id"] for c in "/\\\0"):
        # The id names the run's files (scripts/<id>.py, videos/<id>.mp4, ...): it must stay one path component.
        return issue("unsafe_id", f"id {record['id']!r} is not usable as a file name (/, \\, NUL, . or ..)")
    if record["language"] not in LANGUAGES:
        return issue("unknown_language", f"language {record['language']!r} is not one of {list(LANGUAGES)}")
    task_id = record["id"]
    if task_id in seen:
        return issue("duplicate_id", f"id {task_id!r} already defined on line {seen[task_id]}")
    seen[task_id] = lineno
    return Task(task_id, record["language"], record["instruction"], record["reference_answer"], f"{path}:{lineno}"), None


def load_dataset(path: str | Path, *, strict: bool = True, fmt: str = "auto") -> LoadResult:
    """Load and validate a dataset file (``fmt``: ``auto`` by suffix, ``jsonl`` or ``parquet``)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    if fmt == "auto":
        fmt = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "jsonl"
    if fmt not in ("jsonl", "parquet"):
        raise ValueError(f"unknown dataset format {fmt!r}; expected auto, jsonl or parquet")
    records = _raw_parquet_records(path) if fmt == "parquet" else _raw_jsonl_records(path)

    result = LoadResult(str(path))
    seen: dict[str, int] = {}
    for lineno, record, problem in records:
        if problem is None:
            task, problem = _validate(path, lineno, record, seen)
            if task is not None:
                result.tasks.append(task)
        if problem is not None:
            result.issues.append(problem)
    if strict and result.issues:
        raise DatasetError(result.issues)
    return result


def select_tasks(
    tasks: Iterable[Task],
    *,
    ids: Iterable[str] | None = None,
    languages: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[Task]:
    """Filter by id list and language, keep file order, then apply ``limit`` (per the whole selection).

    Unknown ids in ``ids`` raise, so a typo never yields a silently smaller run.
    """
    tasks = list(tasks)
    if ids is not None:
        wanted = list(dict.fromkeys(ids))
        known = {t.id for t in tasks}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            raise KeyError(f"{len(unknown)} id(s) not in the dataset: {unknown[:10]}")
        keep = set(wanted)
        tasks = [t for t in tasks if t.id in keep]
    if languages is not None:
        langs = set(languages)
        bad = langs - set(LANGUAGES)
        if bad:
            raise ValueError(f"unknown language(s) {sorted(bad)}; expected {list(LANGUAGES)}")
        tasks = [t for t in tasks if t.language in langs]
    if limit is not None:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        tasks = tasks[:limit]
    return tasks


def utf8_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a UTF-8 text file (``\\n``-separated, like ``splitlines`` for such files);
    a line that is not UTF-8 raises ``ValueError`` naming the file, the line and the byte, never a bare
    ``UnicodeDecodeError``."""
    data = Path(path).read_bytes()
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: not valid UTF-8 at byte {exc.start} of the line "
                             f"({exc.reason}); re-encode the file as UTF-8") from None
        yield lineno, text.rstrip("\r")


def read_id_list(path: str | Path) -> list[str]:
    """One id per line; blank lines and ``#`` comments ignored."""
    lines = [text for _, text in utf8_lines(path)]
    return [s.strip() for s in lines if s.strip() and not s.strip().startswith("#")]
