"""Pictures of the findings (`prism-fast inspect RUN ID`, `audit.pictures`): on a real bundled failing response
the PNG exists with the -ql size, the drawn box edges carry the box colour, findings.json names the report's
atoms, and the report with pictures is byte-identical to the report without them."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.pictures import KIND_COLORS, QL_PIXELS, draw_findings, scene_to_pixels
from prism_fast.audit.runner import audit_one
from prism_fast.fixtures import bundled_responses_path
from prism_fast.generate.cleaning import clean_model_output
from prism_fast.pipeline.inspect import inspect_sample

FIXTURES = {f["id"]: f for f in map(json.loads, bundled_responses_path().read_text(encoding="utf-8").splitlines())}
SAMPLE = "SAMPLE-EN-000003"  # intent: two filled squares overlap (like spatial fixture G5)


def _report_ids(segment: dict) -> set:
    ids = {x["mobject"] for x in segment["out_of_bounds"]}
    ids |= {i for x in segment["overlaps"] for i in x["mobjects"]}
    ids |= {i for x in segment["leaks"] for i in (x["mobject"], x["container"])}
    return ids


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    """A minimal run dir as `prism-fast eval` leaves it, audited without pictures."""
    fixture = FIXTURES[SAMPLE]
    assert fixture["intent"]["spatial"] == "overlap"
    code = clean_model_output(fixture["response"], fixture["language"]).code
    run = tmp_path_factory.mktemp("run")
    audit_work = run / "models" / "fixture" / "audit"
    row = audit_one(SAMPLE, code, audit_work, AuditConfig())
    assert row["audit_success"] == 1 and row["visual_structure_pass"] == 0, row
    manifest = {"profile": "reference", "quirks_fixed": [],
                "config": {"audit": {"enabled": True, **asdict(AuditConfig())}}}
    (run / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    report_bytes = (audit_work / "audits" / SAMPLE / "audit_report.json").read_bytes()
    return run, code, report_bytes


@pytest.fixture(scope="module")
def inspected(plain_run):
    run, _, _ = plain_run
    doc = inspect_sample(run, SAMPLE)
    return run, doc


def test_inspect_writes_one_picture_per_segment_at_ql_size(inspected, plain_run):
    run, doc = inspected
    report = json.loads(plain_run[2])
    n_segments = sum(len(s) for s in report.values())
    out = run / "inspect" / SAMPLE
    assert len(doc["segments"]) == n_segments >= 1
    for seg in doc["segments"]:
        png = out / f"segment_{seg['k']}.png"
        assert png.is_file()
        with Image.open(png) as im:
            assert im.size == QL_PIXELS
        assert seg["frame_error"] is None
    assert json.loads((out / "findings.json").read_text(encoding="utf-8")) == doc


def test_report_with_pictures_is_byte_identical(inspected):
    _, doc = inspected
    assert doc["audit_success"] == 1
    assert doc["matches_run_report"] is True  # re-audit with pictures == the run's report, byte for byte


def test_findings_list_the_reports_atoms_and_the_frame_is_the_scene(inspected, plain_run):
    run, doc = inspected
    report = json.loads(plain_run[2])
    for seg in doc["segments"]:
        expected = report[seg["scene"]][seg["segment"]]
        assert seg["findings"] == expected
        assert {a["id"] for a in seg["atoms"]} == _report_ids(expected)
        assert all(a["drawn"] for a in seg["atoms"])
    # the overlap segment: both squares are drawn, in the overlap colour
    flagged = [s for s in doc["segments"] if s["findings"]["overlaps"]]
    assert flagged
    image = np.array(Image.open(run / "inspect" / SAMPLE / flagged[-1]["png"]).convert("RGB"))
    for atom in flagged[-1]["atoms"]:
        x0, y0, x1, y1 = atom["box_drawn"]
        colour = np.array(KIND_COLORS["overlaps"])
        # the left and right edge columns, away from the label at the top-left corner, are box-coloured
        for x in (x0, x1):
            column = image[y0 + (y1 - y0) // 3: y1 - 2, x]
            assert (column == colour).all(axis=1).mean() > 0.9, (atom["id"], x)
        # the box is where the scene bbox maps to
        np.testing.assert_allclose(atom["bbox_px"], scene_to_pixels(atom["bbox_scene"], flagged[-1]["frame"],
                                                                      QL_PIXELS), atol=0.01)
        # inside the box is the rasterised filled square, not the black background
        inside = image[y0 + 4: y1 - 4, x0 + 4: x1 - 4]
        assert inside.reshape(-1, 3).max(axis=1).mean() > 20


def test_batch_opt_in_draws_failing_samples_without_changing_the_report(plain_run, tmp_path):
    _, code, report_bytes = plain_run
    row = audit_one(SAMPLE, code, tmp_path, AuditConfig(pictures=True))
    audit_dir = tmp_path / "audits" / SAMPLE
    assert (audit_dir / "audit_report.json").read_bytes() == report_bytes
    assert row["pictures"]["status"] == "ok", row["pictures"]
    assert Path(row["pictures"]["dir"]) == audit_dir / "pictures"
    assert (audit_dir / "pictures" / "segment_0.png").is_file()
    doc = json.loads((audit_dir / "pictures" / "findings.json").read_text(encoding="utf-8"))
    assert len(doc["segments"]) == row["segment_count"]


def test_off_frame_atom_is_drawn_clipped_on_the_image_edge(tmp_path):
    # synthetic child output: an 854x480 grey frame; atom "far" lies right of the frame (x in [8, 9])
    raw = tmp_path / "raw"
    raw.mkdir()
    Image.new("RGB", QL_PIXELS, (40, 40, 40)).save(raw / "S.Segment_0.png")
    frame = {"center": [0.0, 0.0], "width": 128 / 9, "height": 8.0}
    meta = {"frame": frame, "pixels": list(QL_PIXELS), "bboxes": {"far": [8.0, -0.5, 9.0, 0.5]},
            "error": None, "scene": "S", "segment": "Segment_0", "label": "Step_0", "has_png": True}
    (raw / "S.Segment_0.json").write_text(json.dumps(meta), encoding="utf-8")
    report = {"S": {"Segment_0": {"out_of_bounds": [{"mobject": "far", "dist": 1.889}], "overlaps": [],
                                  "leaks": []}}}
    doc = draw_findings(report, raw, tmp_path / "out")
    atom = doc["segments"][0]["atoms"][0]
    assert atom["bbox_px"][0] > QL_PIXELS[0]  # unclipped pixel box is off the image ...
    x0, y0, x1, y1 = atom["box_drawn"]
    assert x1 == QL_PIXELS[0] - 1 and x1 - x0 >= 1  # ... and drawn on its right edge
    image = np.array(Image.open(tmp_path / "out" / "segment_0.png").convert("RGB"))
    assert (image[(y0 + y1) // 2, x1] == KIND_COLORS["out_of_bounds"]).all()
    # a segment without a captured frame is drawn on black and says why
    (raw / "S.Segment_0.png").unlink()
    meta.update(has_png=False, error="ValueError: bad colour")
    (raw / "S.Segment_0.json").write_text(json.dumps(meta), encoding="utf-8")
    doc = draw_findings(report, raw, tmp_path / "out2")
    assert doc["segments"][0]["frame_error"] == "ValueError: bad colour"


def test_inspect_cli_refuses_missing_arguments_and_unknown_samples(plain_run, tmp_path):
    from omegaconf import OmegaConf

    from prism_fast.pipeline.inspect import inspect_from_config

    base = {"runs_root": str(tmp_path), "model": {"name": "fixture"}}
    assert inspect_from_config(OmegaConf.create({**base, "inspect": {"run": None, "id": None}})) == 2
    assert inspect_from_config(OmegaConf.create({**base, "inspect": {"run": "no-such-run", "id": SAMPLE}})) == 2
    run = plain_run[0]
    assert inspect_from_config(OmegaConf.create({**base, "inspect": {"run": str(run), "id": "NOPE"}})) == 2
