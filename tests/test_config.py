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
    assert cfg.render.timeout_s == 600 and cfg.metrics.td.tau == 25
    for lang, metrics in PAPER.items():
        for metric, (mu, sigma, eps) in metrics.items():
            got = cfg.lang.params[lang][metric]
            assert (got.mu, got.sigma, got.eps) == (mu, sigma, eps)


def test_overrides_compose():
    cfg = _compose("lang=zh", "dataset.limit=5", "profile=improved", "metrics.td.tau=30")
    assert list(cfg.lang.languages) == ["zh"] and list(cfg.lang.params) == ["zh"]
    assert cfg.dataset.limit == 5 and cfg.metrics.td.tau == 30
    assert cfg.run_name == "reference-zh-improved"
    groups = {"dataset": "prism", "model": "fixture", "cluster": "ray"}
    cfg = _compose(*(f"{k}={v}" for k, v in groups.items()), "dataset.path=x.jsonl")
    assert cfg.dataset.subset.enabled is True and cfg.cluster.address == "auto" and cfg.model.kind == "responses"


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
