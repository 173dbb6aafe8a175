"""The set-up paths a user takes must stay in lock-step (the Docker image cannot be built in CI)."""

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "scripts/install_system_deps.sh"
PY_INSTALL = "scripts/install_python.sh"


def _extras(text: str, pattern: str) -> set[str]:
    m = re.search(pattern, text, re.M)
    assert m, pattern
    return set(m.group(1).split(","))


def test_makefile_and_dockerfile_share_the_install_scripts_and_extras():
    makefile = (ROOT / "Makefile").read_text()
    docker = (ROOT / "Dockerfile").read_text()
    assert INSTALL in makefile and f"bash {INSTALL}" in docker
    assert f"bash {PY_INSTALL} $(VENV) $(EXTRAS) editable" in makefile
    make_extras = _extras(makefile, r"^EXTRAS \?= (\S+)$")
    image_extras = _extras(docker, rf"bash {PY_INSTALL} \"\$VIRTUAL_ENV\" (\S+) wheel")
    assert "embeddings" in make_extras and "dev" in make_extras
    assert image_extras == {"gpu", "embeddings"}
    # what the image runs is what the tests ran, plus the GPU wheels: every runtime extra of make is in the image
    assert make_extras - {"dev"} <= image_extras
    extras_in_setup = set(re.findall(r'^    "(\w+)": \[', (ROOT / "setup.py").read_text(), re.M))
    assert make_extras | image_extras <= extras_in_setup
    script = (ROOT / PY_INSTALL).read_text()
    assert "pip uninstall -y onnxruntime" in script and "onnxruntime-gpu==$ORT_GPU" in script


def test_image_base_matches_torch_cuda():
    import torch

    docker = (ROOT / "Dockerfile").read_text()
    m = re.search(r"^ARG CUDA_IMAGE=nvidia/cuda:(\d+)\.(\d+)\.\d+-\w+-ubuntu\S+$", docker, re.M)
    assert m and re.search(r"^FROM \$\{CUDA_IMAGE\}$", docker, re.M)
    assert torch.version.cuda, "torch must be the CUDA build (cu130)"
    assert torch.version.cuda.split(".")[:2] == [m.group(1), m.group(2)], (torch.version.cuda, m.groups())
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video" in docker    # NVDEC needs `video`
    assert re.search(r"^ARG PRISM_FAST_GIT_COMMIT", docker, re.M) and "PRISM_FAST_GIT_COMMIT=${PRISM_FAST_GIT_COMMIT}" in docker
    assert 'ENTRYPOINT ["/opt/prism_fast/scripts/docker-entrypoint.sh"]' in docker
    readme = (ROOT / "README.md").read_text()
    cluster = readme[readme.index("## Cluster"):]
    cluster = cluster[:cluster.index("\n## ", 5)]
    for needle in ("580", "CUDA 13", "--shm-size", "--cap-add SYS_ADMIN", "--privileged", "bubblewrap",
                   "ray start --head", "prism-fast doctor", "--gpus all"):
        assert needle in cluster, needle


def test_dockerignore_keeps_the_context_to_the_source():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", "runs", "outputs", "multirun", "*.egg-info"} <= ignored
    for needed in ("setup.py", "prism_fast", "kernels", "conf", "scripts", "README.md"):
        assert (ROOT / needed).exists() and needed not in ignored


@pytest.mark.parametrize("argv, expected", [
    ([], "prism-fast doctor"),
    (["ray", "start", "--head", "--block"], "ray start --head --block"),
    (["prism-fast", "eval", "lang=en"], "prism-fast eval lang=en"),
    (["eval", "lang=zh"], "prism-fast eval lang=zh"),
    (["doctor"], "prism-fast doctor"),
    (["cluster=ray", "dataset=prism"], "prism-fast cluster=ray dataset=prism"),
    (["--help"], "prism-fast --help"),
    (["bash", "-c", "true"], None),
])
def test_entrypoint_runs_ray_prism_fast_or_the_given_command(tmp_path, argv, expected):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("ray", "prism-fast"):
        (stubs / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
        (stubs / name).chmod(0o755)
    proc = subprocess.run(["bash", str(ROOT / "scripts/docker-entrypoint.sh"), *argv], capture_output=True,
                          text=True, timeout=30, env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (expected or ""), proc.stdout


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
