"""Red-team regressions for the LaTeX format of manim's default preamble (execute/texformat.py, texcache.py).

Each test fails on main at dd9f1e8:

* a separate audit's parent reads the TeX log the script could replace with a FIFO: it blocks forever (a bad
  sample must be a row, never a hang);
* a compile from the format is not the plain compile where the document looks at its line numbers
  (``\\inputlineno``: the body file starts at line 1, the .tex file's ``\\begin{document}`` is on line 5);
"""

from __future__ import annotations

import glob
import os
import textwrap
import threading

import pytest

from prism_fast.execute import sandbox, texcache, texformat

FIFO_AUDIT = textwrap.dedent('''
    import os
    from manim import *

    class Fifo(Scene):
        def construct(self):
            self.add(Square())
            name = os.path.join(os.environ["HOME"], "." + "pri" + "sm_fast_tex_log.jsonl")  # the audit's TeX log (spelled past the static check)
            try:
                os.remove(name)
            except OSError:
                pass
            os.mkfifo(name)
            self.wait(0.1)
    ''')


def test_a_fifo_left_as_the_tex_log_does_not_hang_the_audit_parent(tmp_path):
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_one

    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(row=audit_one(
        "fifo", FIFO_AUDIT, tmp_path / "w", AuditConfig(prefork=False), tex_cache_dir=str(tmp_path / "tex"),
        tex_format=True)), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():  # unblock the parent before failing
        pattern = str(sandbox.run_root() / "audit_fifo_*" / texcache.LOG_NAME)  # (this process's scratch root)
        for fifo in glob.glob(pattern):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        worker.join(30)
        pytest.fail("the audit parent blocked on a FIFO the script left as its TeX log")
    assert "row" in result


@pytest.fixture(scope="module")
def fmt(tmp_path_factory):
    info, why = texformat.build(tmp_path_factory.mktemp("fmt"))
    assert info is not None, why
    return info


@pytest.mark.parametrize("expression", [r"line \the\inputlineno",
                                        r"\ifnum\inputlineno<4 ok\else\undefinedcs\fi"])
def test_a_compile_from_the_format_equals_the_plain_one_for_line_numbers(fmt, tmp_path, expression):
    from manim import TexTemplate

    src = TexTemplate().get_texcode_for_expression(expression)
    out = {}
    for name, how in (("plain", None), ("format", (str(fmt.path), fmt.preamble))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "e.tex").write_text(src, encoding="utf-8")
        out[name] = texformat._svg(tmp_path / name / "e.tex", how)
    assert out["format"] == out["plain"], {k: None if v is None else len(v) for k, v in out.items()}
