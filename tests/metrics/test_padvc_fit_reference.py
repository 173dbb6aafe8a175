"""``prism-fast fit-reference`` on a small run directory: real store rows, real videos (FFV1, written here),
real RapidOCR; the fitted μ/σ/eps recomputed by hand from the raw-score files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from hydra import compose, initialize_config_module


def _video(path: Path, shift: int) -> Path:
    w, h = 160, 96
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), 15, (w, h))
    for t in range(18):
        f = np.zeros((h, w, 3), np.uint8)
        x = 10 + (min(t, 6) * shift if t >= 2 else 0)
        f[30:70, x:x + 40] = 230
        writer.write(f)
    writer.release()
    return path


def test_fit_reference_from_config(tmp_path, capsys):
    from prism_fast.pipeline.fit_reference import fit_reference_from_config
    from prism_fast.store import ResultsStore

    data = tmp_path / "ds.jsonl"
    tasks = [("FIT-EN-1", "Rotate the square, then it leads to a circle.\n- a\n- b"),
             ("FIT-EN-2", "Move the square to the right."),
             ("FIT-EN-3", "No video for this one.")]
    data.write_text("".join(json.dumps({"id": i, "language": "en", "instruction": p,
                                        "reference_answer": "from manim import *"}) + "\n" for i, p in tasks))
    run = tmp_path / "run"
    v1, v2 = _video(tmp_path / "v1.avi", 6), _video(tmp_path / "v2.avi", 12)
    ResultsStore(run).append("exec", [
        {"model": "reference", "lang": "en", "id": "FIT-EN-1", "status": "ok", "success": True, "video_path": str(v1)},
        {"model": "reference", "lang": "en", "id": "FIT-EN-2", "status": "ok", "success": True, "video_path": str(v2)},
        {"model": "reference", "lang": "en", "id": "FIT-EN-3", "status": "error", "success": False,
         "video_path": None}])
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        cfg = compose(config_name="config", overrides=[
            f"runs_root={tmp_path / 'runs'}", "lang=en", f"dataset.path={data}", f"fit_reference.run={run}",
            "metrics.padvc.embedding_backend=tfidf", "metrics.padvc.ocr.provider=cpu",
            f"metrics.padvc.frame_cache_dir={tmp_path / 'frames'}"])
    out = fit_reference_from_config(cfg)

    lang_dir = run / "fit_reference" / "en"
    recs = [json.loads(line) for line in (lang_dir / "padvc_reference_raw_scores.jsonl").read_text().splitlines()]
    assert [r["status"] for r in recs] == ["ok", "ok", "error"] and recs[2]["error"].endswith("video missing")
    raws = [r["padvc_raw"] for r in recs[:2]]
    assert all(r > 0 for r in raws) and raws[0] != raws[1]
    logs = [math.log(r + 1e-8) for r in raws]
    mu = sum(logs) / 2
    sigma = math.sqrt(sum((v - mu) ** 2 for v in logs) / 2)
    fitted = yaml.safe_load((run / "fit_reference" / "fitted_params.yaml").read_text())["params"]["en"]
    assert fitted["padvc"]["mu"] == pytest.approx(mu, rel=1e-12)
    assert fitted["padvc"]["sigma"] == pytest.approx(sigma, rel=1e-12) and fitted["padvc"]["eps"] == 1e-8

    td = [json.loads(line) for line in (lang_dir / "td_reference_raw_scores.jsonl").read_text().splitlines()]
    td_raws = [r["td_raw"] for r in td if r["status"] == "ok"]
    assert len(td_raws) == 2 and fitted["td"]["eps"] == min(v for v in td_raws if v > 0)
    td_logs = [math.log(v + fitted["td"]["eps"]) for v in td_raws]
    assert fitted["td"]["mu"] == pytest.approx(sum(td_logs) / 2, rel=1e-12)
    params = json.loads((lang_dir / "padvc_norm_params.json").read_text())
    assert params["success_records"] == 2 and params["failed_records"] == 1
    printed = capsys.readouterr().out
    assert "| en | padvc | mu |" in printed and "-2.447" in printed            # beside the paper's value
    assert out["paper"]["en"]["padvc"]["mu"] == -2.447
