"""Auditor calibration on a hand-built run (real ResultsStore) and the bundled gold file."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from prism_fast.report.calibrate import (
    CalibrateOptions,
    bundled_gold_path,
    calibrate,
    calibrate_run,
    confusion,
    expand_runs,
    load_gold,
)
from prism_fast.store import ResultsStore

# gold: (id, spatial_pass, kinds)           auditor: (pass, audit_success, breakdown)
GOLD = [
    ("g1", 1, []),            # auditor clean                      -> TN
    ("g2", 1, []),            # auditor overlap                    -> FP (overlap FP)
    ("g3", 0, ["overlap"]),   # auditor overlap                    -> TP (overlap TP)
    ("g4", 0, ["oob"]),       # auditor clean                      -> FN (oob FN)
    ("g5", 0, ["leak"]),      # auditor leak + oob                 -> TP (leak TP, oob FP)
    ("g6", 0, ["overlap"]),   # no audit row                       -> missing
    ("g7", 0, ["overlap"]),   # audit failed to run                -> TP overall, overlap FN
]
AUDIT = {
    "g1": (1, 1, (0, 0, 0)), "g2": (0, 1, (1, 0, 0)), "g3": (0, 1, (2, 0, 0)), "g4": (1, 1, (0, 0, 0)),
    "g5": (0, 1, (0, 1, 1)), "g7": (0, 0, (0, 0, 0)),
}


def _write(run_dir: Path, audit: dict, oob_margin: float) -> Path:
    store = ResultsStore(run_dir)
    rows = []
    for sid, (vsp, ok, (ov, oob, lk)) in audit.items():
        rows.append({"model": "fx", "lang": "en", "id": sid, "status": "ok" if ok else "error",
                     "audit_success": ok, "visual_structure_pass": vsp,
                     "visual_issue_breakdown": {"overlaps": ov, "out_of_bounds": oob, "leaks": lk},
                     "error_msg": None if ok else "Audit produced no valid segments"})
    store.append("audit", rows)
    (run_dir / "run.json").write_text(json.dumps({"config": {"audit": {"oob_margin": oob_margin, "cover_min": 0.1}}}))
    return run_dir


@pytest.fixture()
def gold_file(tmp_path) -> Path:
    path = tmp_path / "gold.jsonl"
    path.write_text("".join(json.dumps({"id": i, "spatial_pass": p, "kinds": k}) + "\n" for i, p, k in GOLD))
    return path


def test_confusion_counts_and_scores():
    c = confusion([(True, True), (True, False), (False, True), (False, False), (True, True)])
    assert (c["tp"], c["fn"], c["fp"], c["tn"]) == (2, 1, 1, 1)
    assert c["precision"] == pytest.approx(2 / 3) and c["recall"] == pytest.approx(2 / 3)
    assert confusion([(False, False)])["precision"] is None


def test_calibrate_run_by_hand(tmp_path, gold_file):
    run = _write(tmp_path / "sweep" / "0", AUDIT, 0.05)
    res = calibrate_run(run, load_gold(gold_file))
    o = res["overall"]
    assert (o["tp"], o["fp"], o["fn"], o["tn"]) == (3, 1, 1, 1)  # TP g3 g5 g7, FP g2, FN g4, TN g1
    assert o["precision"] == pytest.approx(0.75) and o["recall"] == pytest.approx(0.75)
    k = res["per_kind"]
    assert (k["overlap"]["tp"], k["overlap"]["fp"], k["overlap"]["fn"], k["overlap"]["tn"]) == (1, 1, 1, 3)
    assert (k["oob"]["tp"], k["oob"]["fp"], k["oob"]["fn"], k["oob"]["tn"]) == (0, 1, 1, 4)
    assert (k["leak"]["tp"], k["leak"]["fp"], k["leak"]["fn"], k["leak"]["tn"]) == (1, 0, 0, 5)
    assert k["leak"]["precision"] == 1.0 and k["oob"]["recall"] == 0.0
    assert [m["id"] for m in res["false_positives"]] == ["g2"]
    assert [m["id"] for m in res["false_negatives"]] == ["g4"]
    assert res["missing"] == [{"id": "g6", "model": None}] and res["audit_failed"] == 1


def test_multirun_tradeoff_and_outputs(tmp_path, gold_file):
    _write(tmp_path / "sweep" / "0", AUDIT, 0.05)
    fixed = dict(AUDIT, g2=(1, 1, (0, 0, 0)))  # a looser setting clears the false positive
    _write(tmp_path / "sweep" / "1", fixed, 0.2)
    assert [p.name for p in expand_runs([str(tmp_path / "sweep")])] == ["0", "1"]
    # a false-positive picture from inspect is embedded in the HTML
    png = b"\x89PNG\r\n\x1a\n" + b"0" * 16
    (tmp_path / "sweep" / "0" / "inspect" / "g2").mkdir(parents=True)
    (tmp_path / "sweep" / "0" / "inspect" / "g2" / "segment_0.png").write_bytes(png)
    out = calibrate(CalibrateOptions(runs=[str(tmp_path / "sweep")], gold=str(gold_file), out_dir=str(tmp_path / "cal")))
    md = (tmp_path / "cal" / "calibration.md").read_text()
    assert "## Trade-off across runs" in md and "audit.oob_margin" in md and "audit.cover_min" not in md
    rows = (tmp_path / "cal" / "tradeoff.csv").read_text().splitlines()
    assert rows[0].startswith("run,audit.oob_margin,tp,fp,fn,tn,precision,recall")
    assert [r["overall"]["fp"] for r in out["results"]] == [1, 0]
    html = (tmp_path / "cal" / "calibration.html").read_text()
    assert "segment_0.png" in html and "data:image/png;base64," in html


def test_gold_validation(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "spatial_pass": 0, "kinds": []}) + "\n")
    with pytest.raises(ValueError, match="needs at least one kind"):
        load_gold(bad)
    bad.write_text(json.dumps({"id": "a", "spatial_pass": 1, "kinds": ["blur"]}) + "\n")
    with pytest.raises(ValueError, match="unknown kind"):
        load_gold(bad)


def test_bundled_gold_matches_the_bundled_sets():
    gold = load_gold(bundled_gold_path())
    dataset = resources.files("prism_fast.dataset") / "data" / "prism_sample.jsonl"
    ids = {json.loads(line)["id"] for line in dataset.read_text(encoding="utf-8").splitlines() if line.strip()}
    refs = [g for g in gold if g["model"] == "reference"]
    assert {g["id"] for g in refs} == ids and all(g["spatial_pass"] == 1 for g in refs)
    intents = {}
    for line in (resources.files("prism_fast") / "fixtures" / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        intents[r["id"]] = r["intent"]
    fixture = [g for g in gold if g["model"] == "fixture"]
    assert len(fixture) == 10
    for g in fixture:  # the labels (from the frames) agree with what each reply was written to show
        spatial = intents[g["id"]]["spatial"]
        assert g["kinds"] == ([] if spatial is None else [spatial]) and g["spatial_pass"] == int(spatial is None)


def test_calibrate_cli(tmp_path, gold_file):
    run = _write(tmp_path / "run", AUDIT, 0.05)
    out = subprocess.run([sys.executable, "-m", "prism_fast.cli", "calibrate", f"calibrate.gold={gold_file}",
                          f"calibrate.run={run}", f"calibrate.out_dir={tmp_path / 'o'}"],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "precision 0.7500, recall 0.7500" in out.stdout
