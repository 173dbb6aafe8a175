"""Every kernel gives identical results on CPU and CUDA (the cuda case is `gpu`-marked: it fails without CUDA)."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_kernels import (FrameSignalStream, bgr_to_gray, consecutive_pair_signals, dilate, geo_energies,
                           segment_events, text_energies)

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
