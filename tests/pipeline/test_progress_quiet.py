"""Progress bars and ``prism-fast -q``: a bar writes log lines through itself while open (they do not break it),
and ``-q`` leaves the log only."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

from prism_fast.pipeline import progress


def test_a_log_line_goes_through_the_open_bar_and_the_handler_comes_back(monkeypatch):
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    handler = logging.StreamHandler(sys.stderr)  # a console handler, as Hydra's
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        bar = progress.StageProgress("exec", 3)
        assert handler not in root.handlers  # replaced by tqdm's handler while the bar is open
        logging.getLogger("prism_fast.test").warning("a warning while the bar runs")
        bar.update(1)
        bar.close()
        assert handler in root.handlers
        assert "a warning while the bar runs" in stream.getvalue()
    finally:
        root.removeHandler(handler)


def test_quiet_shows_no_bar(monkeypatch):
    monkeypatch.setenv(progress.QUIET_ENV, "1")
    bar = progress.StageProgress("exec", 3)
    assert bar.bar.disable and bar._redirect is None
    bar.update(2, failed=True)
    bar.close()
    assert bar.failed == 2


def test_the_cli_takes_q_before_the_command(tmp_path):
    out = subprocess.run([sys.executable, "-m", "prism_fast.cli", "-q", "evl"], capture_output=True, text=True,
                         timeout=180, cwd=tmp_path)
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "evl" in text and "eval" in text, text  # -q consumed; the typo still named
