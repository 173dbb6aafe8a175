"""The spatial auditor on the bundled data: the spatial-violation responses are caught with the intended kind,
the clean responses pass, and the configured thresholds are the reference ones."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
import yaml

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_one
from prism_fast.fixtures import bundled_responses_path
from prism_fast.generate.cleaning import clean_model_output

FIXTURES = [json.loads(line) for line in bundled_responses_path().read_text(encoding="utf-8").splitlines()]
KIND_FIELD = {"overlap": "overlaps", "oob": "out_of_bounds", "leak": "leaks"}
SPATIAL = [f for f in FIXTURES if f["intent"]["spatial"]]
CLEAN = [f for f in FIXTURES if f["intent"]["fine_type"] is None and f["intent"]["spatial"] is None]


def test_conf_audit_reference_equals_the_reference_defaults():
    from importlib import resources

    text = (resources.files("prism_fast.conf") / "audit" / "reference.yaml").read_text(encoding="utf-8")
    values = yaml.safe_load(text)
    assert values.pop("enabled") is True
    assert values.pop("cache") is True  # the audit cache switch (pipeline), not an AuditConfig field
    values.pop("defaults", None)  # the structured-config schema line (prism_fast/config_schema.py)
    assert values == asdict(AuditConfig())
    assert {k: type(v) for k, v in values.items()} == {k: type(v) for k, v in asdict(AuditConfig()).items()}


@pytest.mark.parametrize("fixture", SPATIAL + CLEAN, ids=lambda f: f["id"])
def test_bundled_responses_audit_as_intended(fixture, tmp_path):
    code = clean_model_output(fixture["response"], fixture["language"]).code
    row = audit_one(fixture["id"], code, tmp_path, AuditConfig())
    assert row["audit_success"] == 1, row["error_msg"]
    kind = fixture["intent"]["spatial"]
    breakdown = row["visual_issue_breakdown"]
    if kind is None:
        assert row["visual_structure_pass"] == 1, breakdown
    else:
        assert row["visual_structure_pass"] == 0
        assert breakdown[KIND_FIELD[kind]] > 0, (kind, breakdown)
