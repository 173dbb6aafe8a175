import subprocess
import sys

import pytest
from hydra import compose, initialize_config_module

from prism_fast.cli import _rewrite_argv
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile

PAPER = {
    "en": {"padvc": (-2.4470, 1.8098, 1e-8), "td": (-3.4075, 0.4680, 4.71e-3)},
    "zh": {"padvc": (-0.6663, 0.6547, 1e-8), "td": (-3.6128059890794395, 0.5952279192727674, 9.807249641469183e-05)},
}


def _compose(*overrides):
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def test_defaults_are_reference_and_both_languages():
    cfg = _compose()
    assert cfg.profile == "reference"
    assert list(cfg.lang.languages) == ["en", "zh"]
    assert cfg.model.name == "reference" and cfg.dataset.name == "sample"
    assert cfg.execute.timeout_s == 600 and cfg.metrics.td.tau == 25
    for lang, metrics in PAPER.items():
        for metric, (mu, sigma, eps) in metrics.items():
            got = cfg.lang.params[lang][metric]
            assert (got.mu, got.sigma, got.eps) == (mu, sigma, eps)


def test_overrides_compose():
    cfg = _compose("lang=zh", "dataset.limit=5", "profile=improved", "metrics.td.tau=30")
    assert list(cfg.lang.languages) == ["zh"] and list(cfg.lang.params) == ["zh"]
    assert cfg.dataset.limit == 5 and cfg.metrics.td.tau == 30
    assert cfg.run_name == "reference-sample-zh-improved"  # the dataset is part of every run name
    groups = {"dataset": "prism", "model": "fixture", "cluster": "ray"}
    cfg = _compose(*(f"{k}={v}" for k, v in groups.items()), "dataset.path=x.jsonl", "cluster.address=auto")
    assert cfg.dataset.subset.enabled is True and cfg.cluster.address == "auto" and cfg.model.kind == "responses"
    assert cfg.run_name == "fixture-prism-all-reference"


def test_profile_switches():
    assert resolve_profile("reference") is REFERENCE
    assert resolve_profile("improved") is IMPROVED
    custom = resolve_profile("reference", {"Q-EXEC-1": True})
    assert custom.name == "custom" and custom.fixes("Q-EXEC-1") and not custom.fixes("Q-EXEC-2")
    assert resolve_profile("improved", {}).fixes("Q-TD-3")
    with pytest.raises(KeyError):
        resolve_profile("reference", {"Q-NOPE-1": True})
    with pytest.raises(ValueError):
        resolve_profile("fast")


def test_argv_rewrite():
    assert _rewrite_argv(["lang=zh"]) == ["lang=zh"]
    assert _rewrite_argv(["report", "x=1"]) == ["command=report", "x=1"]
    assert _rewrite_argv(["inspect", "runs/a", "SAMPLE-EN-000001", "profile=improved"]) == [
        "command=inspect", "inspect.run=runs/a", "inspect.id=SAMPLE-EN-000001", "profile=improved"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "prism_fast.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_help_and_cfg_job():
    out = _cli("--help")
    assert out.returncode == 0
    for word in ("eval", "generate", "fit-reference", "profile-render", "report", "inspect", "lang: all, en, zh"):
        assert word in out.stdout
    out = _cli("--cfg", "job", "lang=zh", "dataset.limit=5")
    assert out.returncode == 0, out.stderr
    assert "limit: 5" in out.stdout and "- zh" in out.stdout


# -- issue #15: type-checked config, required settings, --version, per-command help, nothing in the cwd ---------
from omegaconf import OmegaConf  # noqa: E402


@pytest.mark.parametrize("override, key", [("dataset.limit=abc", "dataset.limit"), ("metrics.td.tau=x", "metrics.td.tau"),
                                           ("execute.timeout_s=1.5", "execute.timeout_s"),
                                           ("cluster.num_cpus=many", "cluster.num_cpus"),
                                           ("audit.cover_min=big", "audit.cover_min"),
                                           ("audit.no_such_key=1", "audit.no_such_key"),
                                           ("execute.workers=abc", "execute.workers"),
                                           ("metrics.padvc.ocr.text_score=high", "metrics.padvc.ocr.text_score"),
                                           ("metrics.padvc.no_such_key=1", "metrics.padvc.no_such_key"),
                                           ("report.bootstrap.resamples=many", "report.bootstrap.resamples"),
                                           ("generate.rounds=two", "generate.rounds"),
                                           ("generate.selfdebug.nope=1", "generate.selfdebug.nope"),
                                           ("dataset.nope=1", "dataset.nope")])
def test_values_are_type_checked_at_compose_time(override, key):
    from hydra.errors import ConfigCompositionException

    with pytest.raises(ConfigCompositionException) as info:
        _compose(override)
    text = f"{info.value} {info.value.__cause__}"
    assert key in text


def test_schemas_follow_the_yaml_and_audit_config():
    from dataclasses import fields

    from prism_fast.audit.config import AuditConfig

    cfg = _compose()  # every key of every group file is declared in its schema, or this raises
    assert {f.name for f in fields(AuditConfig)} <= set(cfg.audit)
    assert OmegaConf.get_type(cfg, "dataset").__name__ == "DatasetSchema"
    assert OmegaConf.get_type(cfg, "cluster").__name__ == "ClusterSchema"
    # dataset=prism has no default file: the path stays required (sample's null must not win the merge)
    prism = _compose("dataset=prism")
    assert OmegaConf.is_missing(prism.dataset, "path") and prism.dataset.subset.enabled is True
    assert OmegaConf.is_missing(_compose("cluster=ray").cluster, "address")
    assert _compose("cluster=local").cluster.address is None
    help_text = _cli("--help").stdout
    assert "schema_" not in help_text  # the schemas are not group options


def test_version_and_per_command_help():
    from prism_fast import __version__
    from prism_fast.buildinfo import git_commit
    from prism_fast.cli import COMMANDS

    out = _cli("--version")
    assert out.returncode == 0 and __version__ in out.stdout and "Hydra" not in out.stdout
    commit = git_commit()
    assert (commit or "commit unknown") in out.stdout
    texts = {}
    for command in COMMANDS:
        out = _cli(command, "--help")
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("Usage: prism-fast") and "Config groups" not in out.stdout
        texts[command] = out.stdout
    assert len(set(texts.values())) == len(COMMANDS)  # each command its own text
    assert "report.runs" in texts["report"] and "fit_reference.padvc" in texts["fit-reference"]
    assert "on_settings_change" in texts["eval"]


def _cli_in(cwd, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "prism_fast.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.mark.parametrize("args, words", [
    (["dataset.limit=abc"], ["dataset.limit", "could not be converted to Integer"]),
    (["execute.workers=abc"], ["execute.workers", "could not be converted to Integer"]),
    (["audit.no_such_key=1"], ["audit.no_such_key"]),
    (["render.workers=2"], ["the config group `render` is now `execute`", "execute.workers=2"]),
    (["dataset=prism"], ["dataset=prism needs dataset.path", "Nothing was written"]),
    (["dataset=prism", "dataset.path=missing.jsonl"], ["missing.jsonl: no such file"]),
    (["cluster=ray"], ["cluster=ray needs cluster.address"]),
    (["cluster=local", "cluster.address=auto"], ["cluster=local starts this run's own Ray instance"]),
    (["generate", "model=local", "dataset=prism"], ["dataset=prism needs dataset.path"]),
])
def test_bad_settings_stop_before_anything_is_written(tmp_path, args, words):
    out = _cli_in(tmp_path, *args, "runs_root=runs")
    text = out.stdout + out.stderr
    assert out.returncode != 0
    for w in words:
        assert w in text, text
    assert "Traceback" not in text
    assert list(tmp_path.iterdir()) == []  # no outputs/<date>/<time>/, no runs/, no log
