"""The results store trusts only part files the driver wrote (issue #13).

The attack that happened: a hostile script wrote Parquet files into ``rows/audit``: a passing audit row for
itself and a failure row for another sample dated ``written_at_ns = 2**62``, which won on read (the newest row
wins). Every part file the driver writes now has an HMAC tag under the run's key (``prism_fast/store.py``); these
tests write forged, edited, moved and future-dated files with real pyarrow and check that reads ignore them,
report them (warning + ``ResultsStore.ignored``/``ignored_report``) and otherwise behave as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time

import pyarrow as pa
import pyarrow.parquet as pq

from prism_fast import fsutil, integrity
from prism_fast.schema import stage_schema
from prism_fast.store import MAX_FUTURE_NS, ResultsStore, tag_path


def _audit_row(i: str, passed: int, status: str = "ok", **kw) -> dict:
    return {"model": "m1", "lang": "en", "id": i, "status": status, "audit_success": 1, "visual_structure_pass": passed,
            "visual_structure_rate": float(passed), **kw}


def _forged_table(rows: list[dict]) -> pa.Table:
    """What the attacking script wrote: a valid Parquet file in the stage's own schema."""
    schema = stage_schema("audit")
    return pa.Table.from_pydict({n: [r.get(n) for r in rows] for n in schema.names}, schema=schema)


def _plant(store: ResultsStore, rows: list[dict], model: str = "m1", lang: str = "en", name: str | None = None):
    part_dir = store.root / "audit" / f"model={model}" / f"lang={lang}"
    part_dir.mkdir(parents=True, exist_ok=True)
    path = part_dir / (name or f"part-{time.time_ns():020d}-1-deadbeef.parquet")
    pq.write_table(_forged_table(rows), path)
    return path


def _by_id(table: pa.Table) -> dict[str, dict]:
    return {r["id"]: r for r in table.to_pylist()}


def test_forged_part_files_are_ignored_and_reported(tmp_path, caplog):
    store = ResultsStore(tmp_path)
    (good,) = store.append("audit", [_audit_row("victim", 1), _audit_row("evil", 0)])
    assert tag_path(good).exists() and tag_path(good).name.startswith(".")
    key_file = tmp_path / integrity.KEY_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600

    # the attack as it happened: a pass for itself, a failure for another sample that would win forever
    planted = _plant(store, [_audit_row("evil", 1, written_at_ns=time.time_ns()),
                             _audit_row("victim", 0, status="error", written_at_ns=2**62)])
    # ... and variants: a bogus sidecar, a tag made with another key
    bogus = _plant(store, [_audit_row("evil", 1, written_at_ns=time.time_ns())], name="part-1-1-bogus.parquet")
    tag_path(bogus).write_text("0" * 64)
    other_key = _plant(store, [_audit_row("evil", 1, written_at_ns=time.time_ns())], name="part-2-1-other.parquet")
    data = other_key.read_bytes()
    tag_path(other_key).write_text(integrity.tag(os.urandom(32), integrity.message(
        "store_part", path=other_key.relative_to(store.root).as_posix(), sha256=fsutil.sha256_hex(data))))

    with caplog.at_level(logging.WARNING, logger="prism_fast.store"):
        reader = ResultsStore(tmp_path)
        rows = _by_id(reader.read("audit"))
    assert rows["victim"]["visual_structure_pass"] == 1 and rows["victim"]["status"] == "ok"
    assert rows["evil"]["visual_structure_pass"] == 0
    assert reader.done_keys("audit", include_failed=False) == {("m1", "en", "victim"), ("m1", "en", "evil")}
    reasons = {i.path.rsplit("/", 1)[-1]: i.reason for i in reader.ignored}
    assert reasons == {planted.name: "no integrity tag", bogus.name: "invalid integrity tag",
                       other_key.name: "invalid integrity tag"}
    report = "\n".join(reader.ignored_report("audit"))
    assert all(p.name in report for p in (planted, bogus, other_key)) and reader.ignored_report("exec") == []
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert all(p.name in logged for p in (planted, bogus, other_key))
    reader.read("audit")  # reading again reports nothing new (one warning per file)
    assert len(reader.ignored) == 3


def test_edited_or_moved_part_files_fail_their_tag(tmp_path):
    store = ResultsStore(tmp_path)
    (part,) = store.append("audit", [_audit_row("a", 0), _audit_row("b", 1)])
    original = part.read_bytes()

    # edited: the same rows with one verdict flipped, the driver's sidecar kept
    table = pq.read_table(part)
    column = table.schema.get_field_index("visual_structure_pass")
    flipped = table.set_column(column, "visual_structure_pass", pa.array([1, 1]).cast(table.schema.field(column).type))
    pq.write_table(flipped, part)
    assert store.read("audit").num_rows == 0
    assert [i.reason for i in store.ignored] == ["invalid integrity tag"]

    # moved with its sidecar into another model's partition (the partition values come from the path)
    part.write_bytes(original)
    assert {r["id"] for r in store.read("audit").to_pylist()} == {"a", "b"}
    other = store.root / "audit" / "model=m2" / "lang=en"
    other.mkdir(parents=True)
    shutil.copy(part, other / part.name)
    shutil.copy(tag_path(part), tag_path(other / part.name))
    rows = store.read("audit").to_pylist()
    assert {r["model"] for r in rows} == {"m1"}
    assert any(i.path.startswith("audit/model=m2/") for i in store.ignored)


def test_future_rows_are_ignored_even_in_a_tagged_file(tmp_path):
    """A driver with a clock far ahead (or any row dated in the future) must not win the dedupe forever."""
    store = ResultsStore(tmp_path)
    store.append("audit", [_audit_row("x", 1), _audit_row("y", 1)])
    table = _forged_table([_audit_row("x", 0, status="error", written_at_ns=2**62),
                           _audit_row("y", 0, status="error", written_at_ns=time.time_ns() + MAX_FUTURE_NS // 2),
                           _audit_row("z", 1, written_at_ns=time.time_ns())])
    store._write_atomically("audit", "m1", "en", table, time.time_ns())  # tagged like any driver write
    rows = _by_id(store.read("audit"))
    assert rows["x"]["status"] == "ok"  # the 2**62 row is gone; within 5 minutes is still accepted
    assert rows["y"]["status"] == "error" and rows["z"]["status"] == "ok"
    (item,) = store.ignored
    assert item.ids == ("x",) and "future" in item.reason and "x" in store.ignored_report()[0]
    # a later real retry wins as before (newest row wins): the 2**62 row no longer shadows it
    store.append("audit", [_audit_row("x", 0, status="error", error_msg="retried")])
    assert _by_id(store.read("audit"))["x"]["error_msg"] == "retried"


def test_a_run_without_its_key_trusts_nothing_and_readers_never_create_one(tmp_path):
    store = ResultsStore(tmp_path)
    store.append("audit", [_audit_row("a", 1)])
    (tmp_path / integrity.KEY_NAME).unlink()
    reader = ResultsStore(tmp_path)
    assert reader.read("audit").num_rows == 0
    assert "integrity.key" in reader.ignored[0].reason
    assert not (tmp_path / integrity.KEY_NAME).exists()
    empty = ResultsStore(tmp_path / "fresh")
    assert empty.read("audit").num_rows == 0 and not (tmp_path / "fresh").exists()


def test_tags_stay_hidden_from_plain_parquet_readers_and_orphans_are_swept(tmp_path):
    import pandas as pd

    store = ResultsStore(tmp_path)
    (part,) = store.append("audit", [_audit_row("a", 1)])
    assert len(pd.read_parquet(tmp_path / "rows" / "audit")) == 1
    orphan = tag_path(part.with_name("part-0-0-gone.parquet"))
    orphan.write_text("0" * 64)
    removed = store.sweep_temporaries()
    assert removed == [orphan] and tag_path(part).exists()
    assert store.read("audit").num_rows == 1
