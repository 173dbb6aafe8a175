"""CI check: the node image's requirement set (`pip install ".[gpu,embeddings]"`) resolves against the package
index — a pip dry run (metadata only, nothing installed). An unreachable index fails fast with a clear message
instead of hanging."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIP_TIMEOUT_S = 20          # per network request
RESOLVE_LIMIT_S = 600


def _index_url() -> str:
    out = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"], capture_output=True,
                         text=True, timeout=60)
    url = out.stdout.strip()
    return url if out.returncode == 0 and url.startswith("http") else "https://pypi.org/simple"


def _unreachable(url: str) -> str | None:
    probe = url.rstrip("/") + "/pip/"
    try:
        with urllib.request.urlopen(urllib.request.Request(probe, method="HEAD"), timeout=PIP_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as exc:   # the index answered: reachable
        return None if exc.code < 500 else f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.slow
def test_gpu_and_embeddings_requirements_resolve(tmp_path):
    index = _index_url()
    problem = _unreachable(index)
    if problem:
        pytest.fail(f"package index {index} is unreachable ({problem}): this check resolves the node image's "
                    "requirement set `.[gpu,embeddings]` against it and needs network access to the index")
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-build-isolation",
           "--quiet", "--no-input", "--timeout", str(PIP_TIMEOUT_S), "--retries", "3", "--report", str(report),
           ".[gpu,embeddings]"]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=RESOLVE_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pip did not resolve `.[gpu,embeddings]` within {RESOLVE_LIMIT_S} s (index {index} too slow?)")
    assert proc.returncode == 0, f"`.[gpu,embeddings]` does not resolve:\n{proc.stderr[-3000:]}"
    resolved = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                for i in json.loads(report.read_text())["install"]}
    assert resolved["pynvvideocodec"] == "2.2.4"
    assert resolved["onnxruntime-gpu"] == "1.31.1"
    assert resolved["torch"] == "2.14.1" and resolved["sentence-transformers"] == "6.2.0"
    # transformers >= 5.25 pulls in the PyPI package `kernels`, an import name our top-level kernels/ folder
    # shadows when the checkout is on sys.path (it broke sentence-transformers' import under pytest)
    assert resolved["transformers"] == "5.24.0" and "kernels" not in resolved
    # the CUDA 13 / cuDNN 9 wheels onnxruntime-gpu[cuda,cudnn] asks for are the ones torch cu130 resolves to
    assert resolved["nvidia-cuda-runtime"].startswith("13.") and "nvidia-cudnn-cu13" in resolved


def test_unreachable_index_is_reported_fast():
    import time

    t0 = time.perf_counter()
    problem = _unreachable("http://127.0.0.1:9/simple")   # discard port: nothing listens
    assert problem and time.perf_counter() - t0 < PIP_TIMEOUT_S + 5
