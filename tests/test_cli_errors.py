"""Errors that name the fix before any work: an unknown command word, a value no code path accepts
(``report.formats``, negative timeouts, ...), a host without a usable sandbox. Each stops the CLI with the fix in
its message, without a traceback and without writing anything (no run directory, no Hydra output, no log)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module

from prism_fast.cli import COMMANDS, unknown_command_text
from prism_fast.pipeline.preflight import config_problems, runs_scripts, sandbox_keys, sandbox_problem
from prism_fast.report.cli import FORMATS


def _compose(*overrides):
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def _cli_in(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prism_fast.cli", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env=env)


def _assert_stopped_before_work(out: subprocess.CompletedProcess, cwd: Path, *words: str) -> str:
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    for w in words:
        assert w in text, text
    assert "Traceback" not in text and "Error parsing override" not in text, text
    assert list(cwd.iterdir()) == [], text  # no runs/, no outputs/<date>/, no log
    return text


# -- unknown command word -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("word, closest", [("evl", "eval"), ("reprot", "report"), ("docter", "doctor"),
                                           ("fit-ref", "fit-reference"), ("profile", "profile-render")])
def test_unknown_command_names_the_closest(word, closest):
    text = unknown_command_text(word)
    assert f"did you mean `prism-fast {closest}`?" in text and "\n" not in text


def test_unknown_word_without_a_close_command_lists_them():
    text = unknown_command_text("lang")  # a setting without =VALUE
    assert "did you mean" not in text and "KEY=VALUE" in text
    assert all(c in text for c in COMMANDS)


def test_cli_typo_is_one_line_naming_the_command(tmp_path):
    out = _cli_in(tmp_path, "evl", "runs_root=runs")
    text = _assert_stopped_before_work(out, tmp_path, "unknown command 'evl'", "did you mean `prism-fast eval`?")
    assert len(text.strip().splitlines()) == 1


# -- values no code path accepts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("overrides", [[], ["profile=improved"], ["model=fixture"], ["model=local"], ["model=openai"],
                                       ["dataset=prism"], ["cluster=ray"], ["lang=zh", "metrics.padvc.enabled=true"],
                                       ["metrics.device=cuda:1", "metrics.decoder=nvdec"],
                                       ["report.formats=[html]", "report.spatial_requires_exec=true"]])
def test_shipped_configs_pass(overrides):
    assert config_problems(_compose(*overrides)) == []  # missing values (???) are left to their own messages


@pytest.mark.parametrize("override, words", [
    ("report.formats=[markdown,pdf]", ["report.formats", "'pdf'", ", ".join(FORMATS)]),
    ("report.denominator=tasks", ["report.denominator", "all_tasks, rendered, audited"]),
    ("execute.timeout_s=-5", ["execute.timeout_s=-5", "greater than 0"]),
    ("execute.timeout_s=0", ["execute.timeout_s=0", "greater than 0"]),
    ("execute.workers=0", ["execute.workers=0", "at least 1"]),
    ("execute.limits.memory_gb=-1", ["execute.limits.memory_gb=-1"]),
    ("generate.timeout_s=-1", ["generate.timeout_s=-1"]),
    ("generate.concurrency=0", ["generate.concurrency=0"]),
    ("dataset.limit=-3", ["dataset.limit=-3"]),
    ("dataset.subset.fraction=1.5", ["dataset.subset.fraction=1.5", "(0.0, 1.0]"]),
    ("metrics.decoder=ffmpeg", ["metrics.decoder", "opencv, decord, pyav, yuv, nvdec, auto"]),
    ("metrics.device=gpu", ["metrics.device='gpu'", "cpu, cuda or cuda:N"]),
    ("metrics.padvc.ocr_backend=tesseract", ["metrics.padvc.ocr_backend", "rapidocr, paddleocr, scene"]),
    ("execute.sandbox=none", ["execute.sandbox", "auto, unsafe"]),
    ("profile=fast", ["profile", "reference, improved"]),
    ("+quirks={Q-NOPE-1: true}", ["Q-NOPE-1"]),
    ("report.compare=[a]", ["report.compare has 1 entries"]),
])
def test_config_problems_name_the_valid_values(override, words):
    problems = config_problems(_compose(override))
    assert len(problems) == 1, problems
    for w in words:
        assert w in problems[0], problems


def test_cli_invalid_report_format_lists_the_valid_ones(tmp_path):
    out = _cli_in(tmp_path, "report", "report.formats=[markdown,pdf]", "runs_root=runs")
    _assert_stopped_before_work(out, tmp_path, "report.formats: 'pdf' is not one of the valid values", *FORMATS)


def test_cli_reports_every_bad_value_at_once(tmp_path):
    out = _cli_in(tmp_path, "execute.timeout_s=-5", "execute.workers=0", "runs_root=runs")
    _assert_stopped_before_work(out, tmp_path, "execute.timeout_s=-5", "execute.workers=0", "Nothing was written")


# -- no usable sandbox ----------------------------------------------------------------------------------------------

def test_commands_that_run_scripts_ask_for_a_sandbox():
    cfg = _compose()
    assert sandbox_keys(cfg, "eval") == ["execute.sandbox", "audit.sandbox"]
    assert sandbox_keys(_compose("audit.enabled=false"), "eval") == ["execute.sandbox"]
    assert sandbox_keys(cfg, "profile-render") == ["execute.sandbox"]
    assert runs_scripts(cfg, "inspect") and sandbox_keys(cfg, "inspect") == []  # at the level its run recorded
    assert sandbox_keys(_compose("model=local"), "generate") == []  # one round: no script runs
    assert sandbox_keys(_compose("model=local", "generate.rounds=3"), "generate") == ["execute.sandbox", "audit.sandbox"]
    for command in ("report", "calibrate", "fit-reference", "doctor"):
        assert sandbox_keys(cfg, command) == [] and not runs_scripts(cfg, command)


def test_this_host_offers_a_sandbox():
    from prism_fast.execute.sandbox import effective_level

    assert os.geteuid() == 0 and effective_level("auto") == "namespaces"  # root with namespaces here
    assert sandbox_problem(_compose(), "eval", effective_level) is None


SETPRIV = shutil.which("setpriv")
NOBODY = 65534


def _as_nobody(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``prism-fast ARGS`` as uid 65534 with a PATH that holds no bubblewrap: the sandbox probe finds no level
    (not root; no bwrap), exactly as on a container started without --cap-add SYS_ADMIN and without bubblewrap."""
    work = tmp_path / "work"
    work.mkdir()
    os.chmod(work, 0o777)
    for parent in work.parents:  # uid 65534 must be able to walk down to its directory
        if parent == Path("/"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    env = {"PATH": "/nonexistent", "HOME": str(work), "LANG": "C.UTF-8"}
    return subprocess.run([SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", sys.executable,
                           "-m", "prism_fast.cli", *args, "runs_root=runs"], capture_output=True, text=True,
                          timeout=180, cwd=work, env=env)


@pytest.fixture
def nobody(tmp_path):
    if os.geteuid() != 0 or SETPRIV is None:
        pytest.skip("needs root (to drop to uid 65534 with setpriv)")
    probe = subprocess.run([SETPRIV, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", sys.executable,
                            "-c", "import prism_fast"], capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"uid {NOBODY} cannot run this Python environment: {probe.stderr[-300:]}")
    return lambda *args: _as_nobody(tmp_path, *args)


def test_no_sandbox_is_refused_before_ray_with_the_fixes(nobody, tmp_path):
    out = nobody("eval")
    text = _assert_stopped_before_work(out, tmp_path / "work", "no usable sandbox", "stopped before Ray",
                                       "--cap-add SYS_ADMIN", "bubblewrap", "execute.sandbox=unsafe",
                                       "audit.sandbox=unsafe", "Nothing was written")
    assert "Started a local Ray instance" not in text


def test_no_sandbox_names_only_the_settings_still_asking_for_one(nobody, tmp_path):
    out = nobody("eval", "execute.sandbox=unsafe")  # the audits still ask for one
    text = _assert_stopped_before_work(out, tmp_path / "work", "no usable sandbox", "audit.sandbox=unsafe")
    assert "execute.sandbox=unsafe (" not in text and "with audit.sandbox=unsafe (" in text


def test_unsafe_opt_in_passes_the_check(nobody):
    # an English run of a Chinese id selects nothing: the run stops right after the check, before any render
    out = nobody("eval", "execute.sandbox=unsafe", "audit.sandbox=unsafe", "execute.tex_cache.enabled=false",
                 "lang=en", "dataset.ids=[SAMPLE-ZH-000001]")
    text = out.stdout + out.stderr
    assert "no usable sandbox" not in text and "no tasks selected" in text, text  # went on to select the tasks
