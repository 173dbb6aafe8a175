"""One real end-to-end run of the bundled sample set (all reference answers, both languages), shared by the
pipeline tests: real local Ray, real sandboxed manim renders."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_module


def compose_config(*overrides: str):
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    from prism_fast.pipeline.run import options_from_config, run_eval

    runs_root = tmp_path_factory.mktemp("runs")
    cfg = compose_config(f"runs_root={runs_root}", "cluster.num_cpus=2")
    opts = options_from_config(cfg)
    summary = run_eval(opts)
    return opts, summary
