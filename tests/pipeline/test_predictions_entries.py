"""A predictions folder whose ``<id>.py`` entries are not regular files, through the real ``prism-fast`` command.

Found: a directory named ``<id>.py`` aborted the whole run with no rows (``IsADirectoryError`` in the loader), and a
FIFO named like a script was taken for an unrequested task (opening one for reading blocks until a writer comes).
Each such entry must be its own sample's error row, naming the problem, and every other sample must be evaluated
as usual.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prism_fast.execute.inputs import NOT_A_REGULAR_FILE, PATH_OUTSIDE_PREDICTIONS
from prism_fast.store import ResultsStore

IDS = ["SAMPLE-EN-000001", "SAMPLE-EN-000002", "SAMPLE-EN-000003", "SAMPLE-EN-000004"]
SCENE = ("from manim import *\n\n\nclass Tiny(Scene):\n    def construct(self):\n"
         "        self.play(Create(Dot()), run_time=0.2)\n")


@pytest.mark.slow  # ~15-40 s on the 2-core machine: Ray start-up, one tiny render and its audit
def test_non_regular_entries_are_error_rows_and_the_rest_is_evaluated(tmp_path):
    cli = Path(sys.executable).with_name("prism-fast")
    if not cli.exists():
        pytest.skip("the prism-fast console script is not installed next to this Python")
    preds = tmp_path / "preds"
    preds.mkdir()
    outside = tmp_path / "outside.py"
    outside.write_text(SCENE)
    (preds / f"{IDS[0]}.py").mkdir()                 # a directory named like a script
    os.mkfifo(preds / f"{IDS[1]}.py")                # a FIFO: a read would block until a writer comes
    (preds / f"{IDS[2]}.py").symlink_to(outside)     # a symlink to a file outside the folder
    (preds / f"{IDS[3]}.py").write_text(SCENE)       # a normal script
    runs = tmp_path / "runs"
    try:
        proc = subprocess.run(
            [str(cli), "model=predictions", "model.name=entries", f"model.predictions={preds}",
             f"dataset.ids=[{','.join(IDS)}]", f"runs_root={runs}", "cluster.num_cpus=2",
             "metrics.td.enabled=false", "metrics.text_expand.enabled=false"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    finally:  # never leave a reader blocked on the FIFO (the assertion below says whether one was)
        try:
            os.close(os.open(preds / f"{IDS[1]}.py", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader: as it should be
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    (run_dir,) = [p for p in runs.iterdir() if p.name != ".cache"]
    store = ResultsStore(run_dir)
    tasks = {r["id"]: r for r in store.read("tasks").to_pylist()}
    execs = {r["id"]: r for r in store.read("exec").to_pylist()}
    audits = {r["id"]: r for r in store.read("audit").to_pylist()}
    assert set(tasks) == set(execs) == set(audits) == set(IDS)

    expected = {IDS[0]: (NOT_A_REGULAR_FILE, f"{IDS[0]}.py is a directory, not a regular file"),
                IDS[1]: (NOT_A_REGULAR_FILE, f"{IDS[1]}.py is a FIFO (named pipe), not a regular file"),
                IDS[2]: (PATH_OUTSIDE_PREDICTIONS, "points outside the predictions directory")}
    for task_id, (kind, detail) in expected.items():
        task, ex = tasks[task_id], execs[task_id]
        assert (task["status"], task["error_kind"], task["clean_status"]) == ("error", kind, kind), task_id
        assert detail in task["error_detail"], task["error_detail"]
        assert task["has_script"] is False
        assert (ex["success"], ex["error_kind"], ex["error_detail"]) == (False, "no_script", kind)
        assert detail in ex["error"]
        assert audits[task_id]["error_kind"] == "no_script"
    ok_task, ok_exec = tasks[IDS[3]], execs[IDS[3]]
    assert (ok_task["status"], ok_task["clean_status"], ok_task["has_script"]) == ("ok", "success", True)
    assert ok_exec["success"] is True and ok_exec["scene_class"] == "Tiny"
    assert audits[IDS[3]]["audit_pass"] in ("shared", "separate")  # audited (its verdict is not this test's)
    assert f"{IDS[0]}.py is a directory" in proc.stderr + proc.stdout  # the warning names the entry
