"""``prism-fast fit-reference`` checks what it needs before it starts and says how to fix it (issue #15, item 8).

It used to fail by default, at the end, with ``PADVC fit: no usable rows (0 ok of 2)``, the cause (no offline
embedding model) only inside a JSONL file. Through the real CLI on a small run directory (real store rows, a real
video written here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import yaml

from prism_fast.store import ResultsStore


def _video(path: Path) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), 15, (96, 64))
    for t in range(12):
        frame = np.zeros((64, 96, 3), np.uint8)
        frame[20:44, 5 + 4 * t:29 + 4 * t] = 220
        writer.write(frame)
    writer.release()
    return path


def _setup(tmp_path: Path, with_video: bool) -> tuple[Path, Path]:
    data = tmp_path / "ds.jsonl"
    data.write_text("".join(json.dumps({"id": i, "language": "en", "instruction": p, "reference_answer": "x"}) + "\n"
                            for i, p in (("FIT-1", "Move the square to the right."), ("FIT-2", "Rotate it."))))
    run = tmp_path / "run"
    video = str(_video(tmp_path / "v.avi")) if with_video else None
    ResultsStore(run).append("exec", [
        {"model": "reference", "lang": "en", "id": "FIT-1", "status": "ok", "success": True, "video_path": video},
        {"model": "reference", "lang": "en", "id": "FIT-2", "status": "error", "success": False, "video_path": None}])
    return data, run


def _fit(tmp_path: Path, data: Path, run: Path, *extra: str):
    env = {k: v for k, v in os.environ.items() if k not in ("PADVC_EN_MODEL", "PADVC_ZH_MODEL")}
    env.update(PADVC_HF_CACHE=str(tmp_path / "empty_hf_cache"), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "prism_fast.cli", "fit-reference", f"fit_reference.run={run}",
           f"dataset.path={data}", "lang=en", f"runs_root={tmp_path / 'runs'}", "metrics.padvc.ocr.provider=cpu",
           f"metrics.padvc.frame_cache_dir={tmp_path / 'frames'}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)


def test_no_videos_is_named_before_anything(tmp_path):
    data, run = _setup(tmp_path, with_video=False)
    proc = _fit(tmp_path, data, run)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "none of the 2 selected task(s) has a rendered video" in text and "prism-fast eval model=reference" in text
    assert not (run / "fit_reference").exists() and "Traceback" not in text


def test_missing_embedding_model_is_named_with_the_fix_before_the_fit(tmp_path):
    data, run = _setup(tmp_path, with_video=True)
    proc = _fit(tmp_path, data, run, f"metrics.padvc.models.en={tmp_path / 'no-such-model'}")
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, text[-3000:]
    assert "fit-reference: PADVC needs the PVD embedding model(s) for 'en'" in text
    assert "metrics.padvc.models.en=" in text and "fit_reference.padvc=false" in text
    assert "no usable rows" not in text and "Traceback" not in text
    assert not (run / "fit_reference").exists()  # nothing fitted, nothing written

    # the fix it names: TD alone fits
    proc = _fit(tmp_path, data, run, "fit_reference.padvc=false")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    fitted = yaml.safe_load((run / "fit_reference" / "fitted_params.yaml").read_text())["params"]["en"]
    assert set(fitted) == {"source", "td"} and (run / "fit_reference" / "en" / "td_center_params.json").is_file()
    assert "1 of 2 selected task(s) have no video" in proc.stdout + proc.stderr
