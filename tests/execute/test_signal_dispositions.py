"""A sample gets the signal dispositions of a shell-started `manim`, whatever the evaluator inherited.

Started with ``&`` from a script (SIGINT and SIGQUIT ignored) or under ``nohup`` (SIGHUP ignored), the evaluator
passes ignored signals to every process it starts; a script that sends itself SIGINT then rendered successfully
instead of failing with KeyboardInterrupt as it does in the toolkit's `manim` (found when the suite ran in the
background). Both render backends: the CLI one (exec) and the prefork one (manim in the forked child)."""

from __future__ import annotations

import signal

import pytest

from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

INTERRUPTS_ITSELF = r"""
import os, signal
from manim import *


class Interrupted(Scene):
    def construct(self):
        os.kill(os.getpid(), signal.SIGINT)
        self.add(Dot())
        self.wait(0.1)
"""

REPORTS = r"""
import signal
from manim import *


class Reports(Scene):
    def construct(self):
        names = ("SIGINT", "SIGQUIT", "SIGHUP", "SIGTERM", "SIGUSR1", "SIGPIPE")
        raise RuntimeError(f"DISPOSITIONS {({n: str(signal.getsignal(getattr(signal, n))) for n in names})}")
"""

IGNORED = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1)


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Renders made while this process ignores IGNORED (what `cmd &` and `nohup` do), through both backends."""
    base = tmp_path_factory.mktemp("dispositions")
    saved = {sig: signal.signal(sig, signal.SIG_IGN) for sig in IGNORED}
    try:
        worker = prefork_worker(RenderConfig())   # its server is exec'd from here: it inherits the ignored signals
        try:
            out = {(name, backend): render_one(f"S-{name}-{backend}", script, base / backend, RenderConfig(),
                                               runner=runner)
                   for name, script in (("interrupted", INTERRUPTS_ITSELF), ("reports", REPORTS))
                   for backend, runner in (("cli", None), ("prefork", worker.run))}
        finally:
            worker.close()
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
    return out


@pytest.mark.parametrize("backend", ["cli", "prefork"])
def test_a_script_interrupting_itself_fails_as_from_a_shell(rows, backend):
    row = rows[("interrupted", backend)]
    assert not row["success"] and row["error_kind"] == "exit_nonzero", row.get("error_detail")
    assert row["error"].strip().endswith("Aborted!")   # manim's CLI (click) on a KeyboardInterrupt


@pytest.mark.parametrize("backend", ["cli", "prefork"])
def test_the_script_sees_default_dispositions(rows, backend):
    row = rows[("reports", backend)]
    line = " ".join(row["error"].split())   # the script's exception message (the traceback box wraps it)
    assert "'SIGINT': '<built-in function default_int_handler>'" in line
    for name in ("SIGQUIT", "SIGHUP", "SIGTERM", "SIGUSR1"):
        assert f"'{name}': '0'" in line, line        # str(signal.SIG_DFL)
    assert "'SIGPIPE': '1'" in line   # SIG_IGN: Python's own start-up setting
