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


def test_entries_that_are_not_regular_files_are_per_task_errors_never_opened(tmp_path, monkeypatch):
    """A directory, a FIFO, a socket, a symlink to a directory or to nothing, named like a script: each is its task's
    error (``not_a_regular_file``, the detail naming the entry and what it is), never opened (a FIFO would block
    the read), and the other tasks are read as usual: no IsADirectoryError out of the loader, and a FIFO is not taken
    for an unrequested task (``missing``)."""
    import os
    import socket
    import threading

    from prism_fast.execute.inputs import NOT_A_REGULAR_FILE, PATH_OUTSIDE_PREDICTIONS, UNREADABLE_PREDICTION

    ids = [f"PRISM-EN-00001{i}" for i in range(8)]
    tasks = [Task(i, "en", "notes", "ref") for i in ids]
    d = tmp_path / "preds"
    d.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n")
    (d / f"{ids[0]}.py").mkdir()
    os.mkfifo(d / f"{ids[1]}.py")
    (d / f"{ids[2]}.py").symlink_to(outside)
    (d / "sub").mkdir()
    (d / f"{ids[3]}.py").symlink_to("sub")
    (d / f"{ids[4]}.py").symlink_to("nothing_here.py")
    server = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(d)  # (a relative name: a socket path is limited to ~100 characters)
    server.bind(f"{ids[5]}.py")
    monkeypatch.undo()
    (d / f"{ids[6]}.py").write_text("ok = 1\n")
    (d / "odd.py").write_text("x = 1\n")
    (d / "odd.py").chmod(0)
    (d / "manifest.jsonl").write_text(json.dumps({"id": ids[7], "file": "odd.py"}) + "\n")
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(got=load_inputs("predictions", tasks, REFERENCE, d)),
                              daemon=True)
    worker.start()
    worker.join(30)
    server.close()
    if worker.is_alive():
        os.close(os.open(d / f"{ids[1]}.py", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("the loader blocked on a FIFO")
    got = {i.id: i for i in result["got"]}
    assert [(got[i].script, got[i].clean_status) for i in ids[:6]] == [
        (None, NOT_A_REGULAR_FILE), (None, NOT_A_REGULAR_FILE), (None, PATH_OUTSIDE_PREDICTIONS),
        (None, NOT_A_REGULAR_FILE), (None, NOT_A_REGULAR_FILE), (None, NOT_A_REGULAR_FILE)]
    assert f"{ids[0]}.py is a directory" in got[ids[0]].detail
    assert f"{ids[1]}.py is a FIFO" in got[ids[1]].detail
    assert "points outside the predictions directory" in got[ids[2]].detail
    assert f"{ids[3]}.py (-> sub) is a directory" in got[ids[3]].detail
    assert "a symlink to nothing" in got[ids[4]].detail
    assert f"{ids[5]}.py is a socket" in got[ids[5]].detail
    assert (got[ids[6]].script, got[ids[6]].clean_status, got[ids[6]].detail) == ("ok = 1\n", "success", None)
    if os.geteuid() != 0:  # (root reads a mode-0 file)
        assert got[ids[7]].clean_status == UNREADABLE_PREDICTION and "odd.py: cannot be opened" in got[ids[7]].detail


def test_a_predictions_path_that_is_a_fifo_is_refused_unread(tmp_path):
    import os

    fifo = tmp_path / "replies.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO"):
        load_inputs("responses", TASKS, REFERENCE, fifo)
