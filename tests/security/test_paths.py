"""A predictions directory names only files inside itself (issue #13).

Found: a ``manifest.jsonl`` entry with an absolute or ``../`` path made prism_fast read a host file, copy it into the
run and execute it. Every way a predictions directory can name a file (manifest entries, ``<id>.py`` and
``<tag>__<id>.py`` files, the manifest itself) is tried here with a path that leaves the directory; each must become
a per-row ``path_outside_predictions`` error and the outside file must never be opened. "Never opened" is observed
with a Python audit hook (every ``open``/``os.open`` of the process raises an ``open`` event), not inferred from the
result.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from prism_fast.dataset.loader import Task, load_dataset
from prism_fast.execute.inputs import NOT_A_REGULAR_FILE, PATH_OUTSIDE_PREDICTIONS, load_inputs
from prism_fast.profile import REFERENCE

IDS = [f"PRISM-EN-00000{i}" for i in range(1, 8)]
TASKS = [Task(i, "en", "notes", "ref") for i in IDS]
SECRET = "HOST_SECRET_DO_NOT_READ = 1\n"

_OPENED: list[str] | None = None  # set while a test records opens


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _OPENED is not None and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # audit hooks cannot be removed; this one records only inside `opened_files`


@pytest.fixture
def opened_files():
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


@pytest.fixture
def layout(tmp_path):
    """``host/secret.py`` (stands for any host file) next to ``preds/`` (the predictions directory)."""
    host = tmp_path / "host"
    host.mkdir()
    secret = host / "secret.py"
    secret.write_text(SECRET)
    preds = tmp_path / "preds"
    preds.mkdir()
    return preds, secret


def _never_opened(opened: list[str], *paths: Path) -> None:
    real = {os.path.realpath(p) for p in paths} | {str(p) for p in paths}
    touched = [o for o in opened if o in real or os.path.realpath(o) in real]
    assert touched == [], f"outside file opened: {touched}"


def _manifest(preds: Path, rows: list[tuple[str, str]]) -> None:
    (preds / "manifest.jsonl").write_text("".join(json.dumps({"id": i, "file": f}) + "\n" for i, f in rows))


def test_every_way_out_is_a_per_row_error_and_never_opened(layout, opened_files, caplog):
    preds, secret = layout
    (preds / "ok.py").write_text("ok = 1\n")
    (preds / "sub").mkdir()
    (preds / "sub" / "inner.py").write_text("inner = 1\n")
    (preds / "link_out.py").symlink_to(secret)                       # a symlink file pointing outside
    (preds / "dir_out").symlink_to(secret.parent, target_is_directory=True)  # a symlinked directory outside
    (preds / f"{IDS[6]}.py").symlink_to(secret)                      # an <id>.py (no manifest) pointing outside
    (preds / "link_in.py").symlink_to(preds / "ok.py")               # a symlink that stays inside: fine
    _manifest(preds, [
        (IDS[0], str(secret)),                                       # absolute
        (IDS[1], f"../{secret.parent.name}/{secret.name}"),          # ../
        (IDS[2], "link_out.py"),                                     # symlink out
        (IDS[3], "dir_out/secret.py"),                               # through a symlinked directory
        (IDS[4], "sub/../ok.py"),                                    # `..` even though it comes back inside
        (IDS[5], "link_in.py"),
    ])
    opened_files.clear()  # record the loader's opens only
    got = {i.id: i for i in load_inputs("predictions", TASKS, REFERENCE, preds)}

    for task_id in IDS[:5] + IDS[6:]:
        assert got[task_id].script is None, task_id
        assert got[task_id].clean_status == PATH_OUTSIDE_PREDICTIONS, task_id
    assert (got[IDS[5]].script, got[IDS[5]].clean_status) == ("ok = 1\n", "success")
    assert not any(SECRET in (i.script or "") for i in got.values())
    _never_opened(opened_files, secret)
    assert str((preds / "ok.py").resolve()) in opened_files  # the hook does see the loader's reads
    assert any(PATH_OUTSIDE_PREDICTIONS in r.getMessage() and IDS[0] in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("entry", ["/etc/passwd", "C:\\Windows\\win.ini", "\\\\server\\share\\x.py", "..",
                                   "../x.py", "a/../../x.py", "..\\x.py", "", ".", "a\x00.py"])
def test_manifest_paths_rejected_without_touching_the_file_system(entry, layout, opened_files):
    preds, _ = layout
    _manifest(preds, [(IDS[0], entry)])
    opened_files.clear()
    (got,) = [i for i in load_inputs("predictions", TASKS, REFERENCE, preds) if i.id == IDS[0]]
    assert (got.script, got.clean_status) == (None, PATH_OUTSIDE_PREDICTIONS)
    assert [o for o in opened_files if not o.endswith("manifest.jsonl")] == []


def test_a_manifest_that_is_itself_a_symlink_out_is_refused_unread(layout, opened_files, tmp_path):
    preds, secret = layout
    outside_manifest = tmp_path / "host" / "manifest.jsonl"
    outside_manifest.write_text(json.dumps({"id": IDS[0], "file": "x.py"}) + "\n")
    (preds / "manifest.jsonl").symlink_to(outside_manifest)
    opened_files.clear()
    with pytest.raises(ValueError, match="not a regular file inside the predictions directory"):
        load_inputs("predictions", TASKS, REFERENCE, preds)
    _never_opened(opened_files, outside_manifest, secret)


def test_a_predictions_directory_reached_through_a_symlink_still_works(layout, tmp_path):
    preds, _ = layout
    (preds / f"{IDS[0]}.py").write_text("a = 1\n")
    (preds / "odd.py").write_text("b = 2\n")
    _manifest(preds, [(IDS[1], "odd.py")])
    alias = tmp_path / "alias"
    alias.symlink_to(preds, target_is_directory=True)
    got = {i.id: (i.script, i.clean_status) for i in load_inputs("predictions", TASKS, REFERENCE, alias)}
    assert got[IDS[0]] == ("a = 1\n", "success") and got[IDS[1]] == ("b = 2\n", "success")


def test_a_fifo_named_like_a_script_is_an_error_row_and_does_not_block(layout):
    """A named pipe (or device) inside the directory would block or never end a read: it is not a script, and
    its task says so (``not_a_regular_file``, the detail naming the entry) instead of looking unrequested."""
    preds, _ = layout
    fifo = preds / f"{IDS[0]}.py"
    os.mkfifo(fifo)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(
        got=load_inputs("predictions", TASKS, REFERENCE, preds)), daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # unblock the reader before failing
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO predictions entry blocked")
    (got,) = [i for i in result["got"] if i.id == IDS[0]]
    assert (got.script, got.clean_status) == (None, NOT_A_REGULAR_FILE)
    assert f"{IDS[0]}.py is a FIFO" in got.detail


def test_crlf_scripts_are_read_as_before(layout):
    """The confined reader keeps Path.read_text's universal newlines (scripts hash the same as before)."""
    preds, _ = layout
    (preds / f"{IDS[0]}.py").write_bytes(b"a = 1\r\nb = '\xff'\r\n")
    (got,) = [i for i in load_inputs("predictions", TASKS, REFERENCE, preds) if i.id == IDS[0]]
    assert got.script == (preds / f"{IDS[0]}.py").read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("bad_id", ["../escape", "a/b", "a\\b", "..", "."])
def test_dataset_ids_that_are_not_one_path_component_are_rejected(bad_id, tmp_path):
    """Task ids name the run's files (scripts/<id>.py, videos/<id>.mp4): one that could leave the run directory is a
    dataset validation issue."""
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": bad_id, "language": "en", "instruction": "i", "reference_answer": "r"},
            {"id": "PRISM-EN-000001", "language": "en", "instruction": "i", "reference_answer": "r"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = load_dataset(path, strict=False)
    assert [t.id for t in result.tasks] == ["PRISM-EN-000001"]
    assert [i.kind for i in result.issues] == ["unsafe_id"]


@pytest.mark.slow  # ~25 s on the 2-core machine: Ray start-up and the stage actors; nothing is rendered
def test_prism_fast_cli_records_outside_entries_as_rows_and_copies_nothing(tmp_path):
    """The real ``prism-fast`` command on a predictions directory whose every entry leaves it (absolute and ``../``
    manifest paths, an ``<id>.py`` symlink to a host file): the run finishes, each task has a row with
    ``path_outside_predictions``, and the host file's content appears nowhere in the run directory."""
    import subprocess

    cli = Path(sys.executable).with_name("prism-fast")
    if not cli.exists():
        pytest.skip("the prism-fast console script is not installed next to this Python")
    from prism_fast.store import ResultsStore

    host = tmp_path / "host"
    host.mkdir()
    secret = host / "secret.py"
    secret.write_text(SECRET)
    preds = tmp_path / "preds"
    preds.mkdir()
    ids = ["SAMPLE-EN-000001", "SAMPLE-EN-000002", "SAMPLE-EN-000003"]
    _manifest(preds, [(ids[0], str(secret)), (ids[1], "../host/secret.py")])
    (preds / f"{ids[2]}.py").symlink_to(secret)
    runs = tmp_path / "runs"
    proc = subprocess.run(
        [str(cli), "model=predictions", "model.name=outside", f"model.predictions={preds}",
         f"dataset.ids=[{','.join(ids)}]", f"runs_root={runs}", "cluster.num_cpus=2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    (run_dir,) = [p for p in runs.iterdir() if p.name != ".cache"]  # <model>-<lang>-<profile> (and caches)
    store = ResultsStore(run_dir)
    tasks = {r["id"]: r for r in store.read("tasks").to_pylist()}
    execs = {r["id"]: r for r in store.read("exec").to_pylist()}
    assert set(tasks) == set(execs) == set(ids)
    for task_id in ids:
        assert (tasks[task_id]["status"], tasks[task_id]["error_kind"]) == ("error", PATH_OUTSIDE_PREDICTIONS)
        assert tasks[task_id]["has_script"] is False
        exec_row = execs[task_id]
        assert (exec_row["error_kind"], exec_row["error_detail"]) == ("no_script", PATH_OUTSIDE_PREDICTIONS)
    leaked = [p for p in run_dir.rglob("*") if p.is_file() and SECRET.strip().encode() in p.read_bytes()]
    assert leaked == []
