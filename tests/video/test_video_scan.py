"""scan_video / read_frames_at: one pass gives the same signals, gray frames and BGR frames as direct decoding."""

import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.metrics.td import td_raw_from_stream
from prism_fast.video.decode import VideoFrames
from prism_fast.video.scan import read_frames_at, scan_video


@pytest.mark.parametrize("backend", ["cv2", "torch"])
def test_scan_matches_full_decode_and_oracle(decode_video, backend):
    frames = torch.cat(list(VideoFrames(decode_video))).numpy()
    idx = list(range(0, len(frames), 15)) + [len(frames) + 5]
    scan = scan_video(decode_video, keep_gray=True, bgr_indices=idx, chunk_size=6, signal_backend=backend)
    ref = oracle.per_frame_signals(list(frames))
    assert scan.totals.frame_count == len(frames) == scan.probe.container_frame_count
    assert scan.totals.positive.tolist() == ref["positive"] and scan.totals.changed.tolist() == ref["changed"]
    assert np.array_equal(scan.gray.numpy(), np.stack(ref["grays"]))
    assert sorted(scan.bgr_at) == idx[:-1]
    for i, f in scan.bgr_at.items():
        assert np.array_equal(f.numpy(), frames[i])
    td = td_raw_from_stream(scan.totals, scan.probe, decoder=scan.decode["decoder"])
    assert td.td_raw == oracle.td_raw_video(str(decode_video))


def test_read_frames_at(decode_video):
    frames = torch.cat(list(VideoFrames(decode_video))).numpy()
    got = read_frames_at(decode_video, [len(frames) - 1, 3, 3, 10 ** 6], chunk_size=4, decoder="pyav")
    assert sorted(got) == [3, len(frames) - 1]
    assert all(np.array_equal(got[i].numpy(), frames[i]) for i in got)
    assert read_frames_at(decode_video, []) == {}


def test_scan_unreadable(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"junk")
    scan = scan_video(bad, keep_gray=True)
    assert scan.totals.frame_count == 0 and scan.gray.shape[0] == 0
    assert not scan.probe.opened and scan.decode["decode_error"]
