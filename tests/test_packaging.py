"""The set-up paths a user takes must stay in lock-step (the Docker image cannot be built in CI)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "scripts/install_system_deps.sh"


def test_makefile_and_dockerfile_share_the_system_install_script():
    assert INSTALL in (ROOT / "Makefile").read_text()
    docker = (ROOT / "Dockerfile").read_text()
    assert f"bash {INSTALL}" in docker
    assert re.search(r"^FROM nvidia/cuda:\S+-runtime-", docker, re.M), "node image must be a CUDA runtime image"
    assert 'ENTRYPOINT ["prism-fast"]' in docker
    assert "pip install ." in docker


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme


def test_pins():
    setup = (ROOT / "setup.py").read_text()
    for pin in ('"manim==0.19.0"', '"torch==2.14.1"', '"torchvision==0.29.1"'):
        assert pin in setup
    assert "prism-fast=prism_fast.cli:main" in setup


def test_package_data_is_importable():
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.fixtures import bundled_responses_path

    assert bundled_dataset_path().is_file()
    assert bundled_responses_path().is_file()
