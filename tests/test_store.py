import json
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

from prism_fast.store import ResultsStore


def _exec_row(i, model="m1", lang="en", status="ok", **kw):
    return {"model": model, "lang": lang, "id": f"S-{i:04d}", "status": status, "success": status == "ok", **kw}


def test_append_reopen_and_partitions(tmp_path):
    store = ResultsStore(tmp_path)
    files = store.append("exec", [_exec_row(1), _exec_row(2, lang="zh"), _exec_row(3, model="org/model:v2")])
    assert len(files) == 3
    reopened = ResultsStore(tmp_path)
    table = reopened.read("exec")
    assert table.column("id").to_pylist() == ["S-0001", "S-0002", "S-0003"]  # sorted by model, lang, id
    assert set(table.column("model").to_pylist()) == {"m1", "org/model:v2"}
    # Plain hive-partitioned Parquet: pandas reads it without prism_fast.
    df = pd.read_parquet(tmp_path / "rows" / "exec")
    assert len(df) == 3 and set(df["lang"].astype(str)) == {"en", "zh"}


def test_newest_row_wins_and_done_keys(tmp_path):
    store = ResultsStore(tmp_path)
    store.append("exec", [_exec_row(1, status="error", error="boom"), _exec_row(2)])
    assert store.done_keys("exec") == {("m1", "en", "S-0001"), ("m1", "en", "S-0002")}
    assert store.done_keys("exec", include_failed=False) == {("m1", "en", "S-0002")}
    store.append("exec", [_exec_row(1)])
    table = store.read("exec")
    assert table.num_rows == 2
    assert table.column("status").to_pylist() == ["ok", "ok"]
    assert store.read("exec", dedupe=False).num_rows == 3


def test_rows_of_one_model_keyed_for_joins(tmp_path):
    store = ResultsStore(tmp_path)
    store.append("exec", [_exec_row(1, status="error", error="boom"), _exec_row(2, lang="zh"),
                          _exec_row(1, model="other")])
    store.append("exec", [_exec_row(1)])  # a retried failure: the newest row is the one joined
    assert [(r["model"], r["lang"], r["id"]) for r in store.rows("exec")] == [
        ("m1", "en", "S-0001"), ("m1", "zh", "S-0002"), ("other", "en", "S-0001")]
    assert [r["model"] for r in store.rows("exec", "other")] == ["other"]
    by_key = store.rows_by_key("exec", "m1")
    assert sorted(by_key) == [("en", "S-0001"), ("zh", "S-0002")]
    assert by_key[("en", "S-0001")]["status"] == "ok" and by_key[("en", "S-0001")]["error"] is None
    assert store.rows_by_key("exec", "nobody") == {} and store.rows("audit", "m1") == []


def test_validation(tmp_path):
    store = ResultsStore(tmp_path)
    with pytest.raises(KeyError, match="unknown field"):
        store.append("exec", [{**_exec_row(1), "not_a_field": 1}])
    with pytest.raises(KeyError, match="unknown stage"):
        store.append("nope", [_exec_row(1)])
    with pytest.raises(KeyError, match="key field"):
        store.append("exec", [{"model": "m", "lang": "en", "status": "ok"}])
    assert store.read("exec").num_rows == 0


def test_nested_values_are_json(tmp_path):
    store = ResultsStore(tmp_path)
    store.append("exec", [_exec_row(1, hallucination_findings=[{"name": "FooBar", "kind": "name"}])])
    (cell,) = store.read("exec").column("hallucination_findings").to_pylist()
    assert json.loads(cell) == [{"kind": "name", "name": "FooBar"}]


WRITER = textwrap.dedent(
    """
    import sys
    from prism_fast.store import ResultsStore
    store = ResultsStore(sys.argv[1])
    big = "x" * 200_000  # large cells make each write take long enough to be killed inside it
    i = 0
    while True:
        rows = [{"model": "m", "lang": "en", "id": f"S-{i:06d}-{k}", "status": "ok", "stderr_tail": big}
                for k in range(50)]
        store.append("exec", rows)
        i += 1
        print(i, flush=True)
    """
)


def test_writer_killed_mid_write_leaves_no_corrupt_file(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(3):  # wait until a few batches landed, then kill at an arbitrary point
            assert proc.stdout.readline().strip(), "writer died early"
        time.sleep(0.37)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    store = ResultsStore(tmp_path)
    parts = store.part_files("exec")
    assert len(parts) >= 3
    for p in parts:  # every visible part file is complete
        assert pq.read_metadata(p).num_rows == 50
    table = store.read("exec")
    assert table.num_rows == 50 * len(parts)
    # A rerun appends after sweeping any half-written temporary.
    store.sweep_temporaries()
    assert not list((tmp_path / "rows").rglob(".*.tmp"))
    store.append("exec", [{"model": "m", "lang": "en", "id": "after", "status": "ok"}])
    assert store.read("exec").num_rows == 50 * len(parts) + 1
