"""The OpenCV CPU backend gives exactly the integers of the torch kernels (and of the oracle)."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.video.cpu_signals import Cv2FrameSignalStream, make_signal_stream
from prism_fast.video.decode import VideoFrames
from prism_kernels import FrameSignalStream


def _run(stream, chunks):
    grays = [stream.update(c) for c in chunks]
    return stream.finish(), torch.cat(grays)


@pytest.mark.parametrize("seed, chunk", [(0, 1), (1, 4), (2, 30)])
def test_cv2_stream_equals_kernel_stream(seed, chunk):
    clip = torch.from_numpy(oracle.synthetic_clip(seed, frames=30))
    chunks = [clip[i:i + chunk] for i in range(0, 30, chunk)]
    a, ga = _run(Cv2FrameSignalStream(25, absolute=True), chunks)
    b, gb = _run(FrameSignalStream(25, absolute=True), chunks)
    assert (a.frame_count, a.height, a.width) == (b.frame_count, b.height, b.width) == (30, 120, 160)
    for name in ("positive", "changed", "absolute"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert torch.equal(ga, gb)
    ref = oracle.per_frame_signals(list(clip.numpy()))
    assert a.positive.tolist() == ref["positive"] and a.changed.tolist() == ref["changed"]


def test_cv2_stream_on_render_equals_kernels(decode_video):
    a, _ = _run(Cv2FrameSignalStream(25), VideoFrames(decode_video, chunk_size=8))
    b, _ = _run(FrameSignalStream(25), VideoFrames(decode_video, chunk_size=8))
    assert a.frame_count == b.frame_count > 1
    assert torch.equal(a.positive, b.positive) and torch.equal(a.changed, b.changed)
    assert a.positive.sum() > 0


def test_backend_selection_and_errors():
    assert isinstance(make_signal_stream("auto", torch.device("cpu")), Cv2FrameSignalStream)
    assert isinstance(make_signal_stream("torch", torch.device("cpu")), FrameSignalStream)
    assert isinstance(make_signal_stream("auto", torch.device("cuda")), FrameSignalStream)
    with pytest.raises(ValueError, match="runs on the CPU"):
        make_signal_stream("cv2", torch.device("cuda"))
    with pytest.raises(ValueError, match="got 'numpy'"):
        make_signal_stream("numpy", torch.device("cpu"))
    with pytest.raises(ValueError, match=r"expected \(T, H, W, 3\) uint8, got \(2, 4, 4\)"):
        Cv2FrameSignalStream().update(np.zeros((2, 4, 4), dtype=np.uint8))
    s = Cv2FrameSignalStream()
    s.update(np.zeros((1, 4, 5, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"got \(4, 6\)"):
        s.update(np.zeros((1, 4, 6, 3), dtype=np.uint8))
