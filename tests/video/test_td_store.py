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


def test_a_cpu_td_raw_loads_no_torch_and_equals_the_tensor_path(decode_video, bundled_renders):
    """The render workers' TD_raw on a CPU device (``store_td_raw``: OpenCV decode, per-frame signals, plain-int
    ratios) runs in a fresh interpreter without importing torch (~3.5 s and ~500 MB per worker), and gives the very
    TDRaw of the batched torch path (prism_kernels' streams and ``change_ratios``) on real renders."""
    import json
    import subprocess
    import sys

    videos = [str(decode_video), *(str(v) for v in bundled_renders.values())]
    code = (
        "import json, sys, dataclasses\n"
        "from prism_fast.metrics.td import compute_td_raw\n"
        "from prism_fast.profile import REFERENCE, IMPROVED\n"
        "out = [dataclasses.asdict(compute_td_raw(v, profile=p, decoder='auto', device='cpu'))\n"
        "       for v in json.loads(sys.argv[1]) for p in (REFERENCE, IMPROVED)]\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'kernels': 'prism_kernels' in sys.modules, 'td': out}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(videos)], capture_output=True, text=True,
                          timeout=300, check=True)
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["torch"] is False and doc["kernels"] is False
    import dataclasses

    expected = [dataclasses.asdict(compute_td_raw(v, profile=p, decoder="opencv", device="cpu", signal_backend="torch"))
                for v in videos for p in (REFERENCE, IMPROVED)]
    assert len(expected) == 6 and all(e["status"] == "ok" for e in expected)
    assert doc["td"] == expected  # floats through JSON: repr round-trips, so equal means bit for bit
