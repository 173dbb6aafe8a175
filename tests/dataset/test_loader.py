import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prism_fast.dataset.loader import DatasetError, load_dataset, read_id_list, select_tasks


def _row(i, lang="en", **extra):
    row = {"id": f"T-{lang.upper()}-{i:06d}", "language": lang, "instruction": f"notes {i}", "reference_answer": "x=1\n"}
    row.update(extra)
    return row


def _write_lines(path, lines):
    path.write_bytes(b"\n".join(l if isinstance(l, bytes) else l.encode("utf-8") for l in lines) + b"\n")
    return path


def test_valid_jsonl_keeps_order_and_source(tmp_path):
    p = _write_lines(tmp_path / "d.jsonl", [json.dumps(_row(1)), "", json.dumps(_row(2, "zh"), ensure_ascii=False)])
    res = load_dataset(p)
    assert [t.id for t in res.tasks] == ["T-EN-000001", "T-ZH-000002"]
    assert res.tasks[1].source.endswith("d.jsonl:3")
    assert res.issues == []
    assert res.by_language() == {"en": 1, "zh": 1}


@pytest.mark.parametrize(
    "line, kind",
    [
        (b'{"id": "A", "language": "en", "instruction": "x"', "malformed_json"),
        (json.dumps({"id": "A", "language": "en", "instruction": "x"}).encode(), "missing_field"),
        (json.dumps(_row(9, "fr")).encode(), "unknown_language"),
        (b'{"id": "A", "language": "en", "instruction": "caf\xe9", "reference_answer": ""}', "non_utf8"),
        (b"[1, 2]", "not_object"),
        (json.dumps({**_row(3), "instruction": 5}).encode(), "bad_type"),
    ],
)
def test_each_bad_line_is_reported_with_file_and_line(tmp_path, line, kind):
    p = _write_lines(tmp_path / "bad.jsonl", [json.dumps(_row(1)), line, json.dumps(_row(2))])
    with pytest.raises(DatasetError) as err:
        load_dataset(p)
    assert [i.kind for i in err.value.issues] == [kind]
    assert err.value.issues[0].line == 2
    assert f"bad.jsonl:2: {kind}" in str(err.value)

    lenient = load_dataset(p, strict=False)
    assert [t.id for t in lenient.tasks] == ["T-EN-000001", "T-EN-000002"]
    assert [(i.line, i.kind) for i in lenient.issues] == [(2, kind)]


def test_duplicate_id_names_first_line(tmp_path):
    p = _write_lines(tmp_path / "dup.jsonl", [json.dumps(_row(1)), json.dumps(_row(2)), json.dumps(_row(1))])
    res = load_dataset(p, strict=False)
    assert len(res.tasks) == 2
    (issue,) = res.issues
    assert (issue.kind, issue.line) == ("duplicate_id", 3)
    assert "line 1" in issue.message


def test_strict_error_lists_every_problem(tmp_path):
    p = _write_lines(tmp_path / "many.jsonl", [b"{", json.dumps(_row(1, "de")).encode(), json.dumps(_row(2))])
    with pytest.raises(DatasetError) as err:
        load_dataset(p)
    assert [i.kind for i in err.value.issues] == ["malformed_json", "unknown_language"]


def test_parquet_input(tmp_path):
    rows = [_row(1), _row(2, "zh"), _row(3, "xx")]
    p = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), p)
    res = load_dataset(p, strict=False)
    assert [t.id for t in res.tasks] == ["T-EN-000001", "T-ZH-000002"]
    assert [(i.line, i.kind) for i in res.issues] == [(3, "unknown_language")]


def test_parquet_missing_column(tmp_path):
    p = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "language": "en"}]), p)
    with pytest.raises(DatasetError, match="lacks column"):
        load_dataset(p)


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_dataset(tmp_path / "nope.jsonl")


def test_filters(tmp_path):
    p = _write_lines(tmp_path / "d.jsonl", [json.dumps(_row(i, lang), ensure_ascii=False) for i in range(4) for lang in ("en", "zh")])
    tasks = load_dataset(p).tasks
    assert [t.id for t in select_tasks(tasks, languages=["zh"], limit=2)] == ["T-ZH-000000", "T-ZH-000001"]
    assert [t.id for t in select_tasks(tasks, ids=["T-EN-000003", "T-ZH-000000"])] == ["T-ZH-000000", "T-EN-000003"]
    with pytest.raises(KeyError, match="T-EN-000099"):
        select_tasks(tasks, ids=["T-EN-000099"])
    with pytest.raises(ValueError, match="fr"):
        select_tasks(tasks, languages=["fr"])
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# chosen\nT-EN-000001\n\nT-ZH-000002\n")
    assert read_id_list(ids_file) == ["T-EN-000001", "T-ZH-000002"]
