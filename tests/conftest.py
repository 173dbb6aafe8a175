"""Root test configuration: the ``--device`` option and the device parametrisation helper."""

from __future__ import annotations

import pytest
import torch


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--device", default="cpu", help="torch device for device-parametrised tests (cpu, cuda)")


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> torch.device:
    name = request.config.getoption("--device")
    if name.startswith("cuda") and not torch.cuda.is_available():
        pytest.fail(f"--device {name} requested but CUDA is not available")
    return torch.device(name)


def cpu_and_cuda() -> list:
    """Parametrisation: cpu always; cuda as a `gpu`-marked case (fails, never skips, without CUDA)."""
    return [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not torch.cuda.is_available():
        pytest.fail("test marked gpu needs CUDA; run the suite with -m 'not gpu' on a CPU machine")
