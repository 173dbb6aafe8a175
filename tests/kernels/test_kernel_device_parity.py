"""Every kernel gives identical results on CPU and CUDA (the cuda case is `gpu`-marked: it fails without CUDA)."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels import (FrameSignalStream, bgr_to_gray, change_ratios, consecutive_pair_signals, dilate,
                           energy_from_sums, geo_energies, segment_events, text_energies)

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.gpu)]


def _run_all(clip: torch.Tensor, masks: torch.Tensor) -> dict:
    gray = bgr_to_gray(clip)
    sig = consecutive_pair_signals(gray, 25, absolute=True)
    ev = segment_events(sig.positive, 50_000.0)
    dil = dilate(masks[: len(ev)])
    stream = FrameSignalStream(25)
    for i in range(0, clip.shape[0], 4):
        stream.update(clip[i:i + 4])
    st = stream.finish()
    return {
        "gray": gray, "positive": sig.positive, "absolute": sig.absolute, "changed": sig.changed,
        "events": ev, "dilated": dil, "e_text": text_energies(masks),
        "e_geo": geo_energies(gray[ev[:, 0]], gray[ev[:, 1]], dil),
        "stream_positive": st.positive, "stream_changed": st.changed,
    }


@pytest.mark.parametrize("device", DEVICES)
def test_kernels_identical_across_devices(device):
    clip = torch.from_numpy(oracle.synthetic_clip(21, frames=40, height=96, width=128))
    rng = np.random.default_rng(21)
    masks = torch.from_numpy(((rng.random((40, 96, 128)) < 0.01) * 255).astype(np.uint8))
    expected = _run_all(clip, masks)
    got = _run_all(clip.to(device), masks.to(device))
    assert len(expected["events"]) > 0
    for name, ref in expected.items():
        out = got[name]
        assert out.device.type == torch.device(device).type, name
        assert out.dtype == ref.dtype, name
        assert torch.equal(out.cpu(), ref), name


@pytest.mark.parametrize("device", DEVICES)
def test_float_quotients_are_pythons_on_every_device(device):
    """Energies (sum / 1e5) and change ratios (count / pixels) equal Python's correctly rounded ``a / b``. CUDA
    turns a division by a Python number into a multiplication by its reciprocal (one ulp off for, e.g., 258315 /
    1e5), which the first H200 run of this suite caught."""
    sums = torch.arange(0, 1_000_000, dtype=torch.int64)
    expected = torch.tensor([k / 1e5 for k in range(1_000_000)], dtype=torch.float64)
    assert torch.equal(energy_from_sums(sums.to(device)).cpu(), expected)
    pixels = 854 * 480
    counts = torch.arange(0, pixels + 1, dtype=torch.int64)
    expected = torch.tensor([c / pixels for c in range(pixels + 1)], dtype=torch.float64)
    assert torch.equal(change_ratios(counts.to(device), pixels).cpu(), expected)
