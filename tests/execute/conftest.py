"""Fixtures shared by the render tests of this folder."""

from __future__ import annotations

import pytest

from prism_fast.execute.render import RenderConfig, prefork_worker


@pytest.fixture(scope="module")
def worker_cfg(tmp_path_factory):
    """(root, RenderConfig with a fresh TeX cache, a started prefork worker) for one test module."""
    root = tmp_path_factory.mktemp("tex_render")
    cfg = RenderConfig(timeout_s=300, tmp_root=str(root / "tmp"), tex_cache_dir=str(root / "cache"))
    worker = prefork_worker(cfg)
    yield root, cfg, worker
    worker.close()
