import json

import pytest

from prism_fast.dataset.loader import Task
from prism_fast.execute.inputs import load_inputs
from prism_fast.profile import REFERENCE

TASKS = [Task(f"PRISM-EN-00000{i}", "en", "notes", "ref") for i in range(1, 5)]


def test_directory_naming_schemes_and_missing(tmp_path):
    d = tmp_path / "cleaned_scripts"
    d.mkdir()
    (d / "PRISM-EN-000001.py").write_text("a = 1\n")
    (d / "prism_dataset__PRISM-EN-000002.py").write_text("b = 2\n")  # the authors' generation naming
    (d / "odd_name.py").write_text("c = 3\n")
    (d / "manifest.jsonl").write_text(json.dumps({"id": "PRISM-EN-000003", "file": "odd_name.py"}) + "\n")
    got = {i.id: (i.script, i.clean_status) for i in load_inputs("predictions", TASKS, REFERENCE, d)}
    assert got == {"PRISM-EN-000001": ("a = 1\n", "success"), "PRISM-EN-000002": ("b = 2\n", "success"),
                   "PRISM-EN-000003": ("c = 3\n", "success"), "PRISM-EN-000004": (None, "missing")}


def test_bad_manifest_line_is_named(tmp_path):
    (tmp_path / "manifest.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match="manifest.jsonl:1"):
        load_inputs("predictions", TASKS, REFERENCE, tmp_path)


def test_raw_responses_are_cleaned_and_first_id_wins(tmp_path):
    p = tmp_path / "responses.jsonl"
    rows = [{"id": "PRISM-EN-000001", "response": "Sure!\\n```python\\nfrom manim import *\\nclass A(Scene):\\n    pass\\n```"},
            {"id": "PRISM-EN-000001", "response": "ignored"},
            {"id": "PRISM-EN-000002", "response": ""}]
    p.write_text("".join(json.dumps(r).replace("\\\\n", "\\n") + "\n" for r in rows))
    got = {i.id: i for i in load_inputs("responses", TASKS, REFERENCE, p)}
    assert got["PRISM-EN-000001"].script.startswith("from manim import *")
    assert got["PRISM-EN-000001"].format_pollution is not None
    assert got["PRISM-EN-000002"].script is None and got["PRISM-EN-000002"].clean_status == "empty_after_cleanup"
    assert got["PRISM-EN-000003"].clean_status == "missing"
    with pytest.raises(FileNotFoundError):
        load_inputs("predictions", TASKS, REFERENCE, tmp_path / "nope")


def test_non_utf8_predictions_jsonl_names_the_file_and_line(tmp_path):
    """A raw-replies JSONL with a non-UTF-8 line: a ValueError naming file, line and byte (issue #15), not a bare
    UnicodeDecodeError; a U+2028 inside a JSON string is not a line break."""
    import json as _json

    from prism_fast.execute.inputs import _read_responses

    good = tmp_path / "good.jsonl"
    good.write_text(_json.dumps({"id": "a", "response": "x\u2028y"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert _read_responses(good)["a"]["response"] == "x\u2028y"
    bad = tmp_path / "replies.jsonl"
    bad.write_bytes(_json.dumps({"id": "a", "response": "ok"}).encode() + b"\n" + b'{"id": "b", "response": "\xff"}\n')
    with pytest.raises(ValueError, match=r"replies\.jsonl:2: not valid UTF-8 at byte 25 "):
        _read_responses(bad)
