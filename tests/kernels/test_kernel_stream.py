"""FrameSignalStream: chunked results equal whole-video results for every chunk size."""

import pytest
import torch

from bench import oracle
from prism_kernels import FrameSignalStream, bgr_to_gray, consecutive_pair_signals


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 23, 64])
def test_streamed_equals_whole(chunk):
    clip = torch.from_numpy(oracle.synthetic_clip(11, frames=23))
    whole = consecutive_pair_signals(bgr_to_gray(clip), 25, absolute=True)
    stream = FrameSignalStream(25, absolute=True)
    grays = [stream.update(clip[i:i + chunk]) for i in range(0, clip.shape[0], chunk)]
    out = stream.finish()
    assert out.frame_count == 23 and out.pair_count == 22 and (out.height, out.width) == (120, 160)
    assert torch.equal(out.positive, whole.positive)
    assert torch.equal(out.changed, whole.changed)
    assert torch.equal(out.absolute, whole.absolute)
    assert torch.equal(torch.cat(grays), bgr_to_gray(clip))


def test_stream_matches_oracle_series():
    clip = oracle.synthetic_clip(12, frames=17)
    ref = oracle.per_frame_signals(list(clip))
    stream = FrameSignalStream(25)
    for i in range(0, 17, 5):
        stream.update(torch.from_numpy(clip[i:i + 5]))
    out = stream.finish()
    assert out.positive.tolist() == ref["positive"]
    assert out.changed.tolist() == ref["changed"]
    assert out.absolute is None


def test_empty_and_single_frame_streams():
    out = FrameSignalStream().finish()
    assert out.frame_count == 0 and out.positive.shape == (0,) and out.pair_count == 0
    s = FrameSignalStream()
    s.update(torch.zeros(1, 4, 5, 3, dtype=torch.uint8))
    s.update(torch.zeros(0, 4, 5, 3, dtype=torch.uint8))
    out = s.finish()
    assert out.frame_count == 1 and out.changed.shape == (0,)


def test_stream_rejects_resolution_change():
    s = FrameSignalStream()
    s.update(torch.zeros(2, 4, 5, 3, dtype=torch.uint8))
    with pytest.raises(ValueError, match=r"expected frames of H×W \(4, 5\).*got \(4, 6\)"):
        s.update(torch.zeros(2, 4, 6, 3, dtype=torch.uint8))
