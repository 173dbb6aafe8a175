"""TD_raw decoded by the render worker for the TD stage (metrics/td_store.py): the stored value is the TD stage's own
``compute_td_raw`` result, and it is taken only for the very video and the very settings it was computed from."""

from __future__ import annotations

import shutil

from prism_fast.metrics import td_store
from prism_fast.metrics.td import compute_td_raw
from prism_fast.profile import IMPROVED, REFERENCE


def test_the_stored_td_raw_is_the_stage_computation_and_only_for_its_video_and_settings(decode_video, tmp_path):
    video = tmp_path / "videos" / "A.mp4"
    video.parent.mkdir()
    shutil.copyfile(decode_video, video)
    settings = td_store.td_settings(25, REFERENCE, "auto", "cpu")
    stored = td_store.store_td_raw(tmp_path, "A", str(video), settings, REFERENCE)
    assert stored == compute_td_raw(str(video), pixel_threshold=25, profile=REFERENCE, decoder="auto", device="cpu")
    assert stored.status == "ok" and stored.td_raw > 0
    assert td_store.load_td_raw(tmp_path, "A", str(video), settings) == stored

    # other settings: threshold, profile, decoder
    for other in (td_store.td_settings(5, REFERENCE, "auto", "cpu"), td_store.td_settings(25, IMPROVED, "auto", "cpu"),
                  td_store.td_settings(25, REFERENCE, "pyav", "cpu")):
        assert td_store.load_td_raw(tmp_path, "A", str(video), other) is None
    # another sample's id, a changed video, a damaged entry
    assert td_store.load_td_raw(tmp_path, "B", str(video), settings) is None
    with open(video, "ab") as fh:
        fh.write(b"\0")
    assert td_store.load_td_raw(tmp_path, "A", str(video), settings) is None
    td_store.store_td_raw(tmp_path, "A", str(video), settings, REFERENCE)
    assert td_store.load_td_raw(tmp_path, "A", str(video), settings) is not None
    td_store.entry_path(tmp_path, "A").write_text("{not json", encoding="utf-8")
    assert td_store.load_td_raw(tmp_path, "A", str(video), settings) is None
    td_store.forget(tmp_path, "A")
    assert not td_store.entry_path(tmp_path, "A").exists()
