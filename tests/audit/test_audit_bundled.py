"""The spatial auditor on the bundled data: the spatial-violation responses are caught with the intended kind,
the clean responses pass, and the configured thresholds are the reference ones."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

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


def test_conf_audit_reference_is_the_schema():
    """conf/audit/reference.yaml repeats no threshold: the composed ``audit`` group is AuditConfig's reference
    values (declared once), with their types, and the typed object the pipeline gets is ``AuditConfig()``."""
    from importlib import resources

    from prism_fast.config_schema import compose_group

    text = (resources.files("prism_fast.conf") / "audit" / "reference.yaml").read_text(encoding="utf-8")
    # the pipeline's switches (enabled, cache: not AuditConfig fields; prefork: how separate audits are started,
    # off in AuditConfig() for a library call, on in the pipeline, identical reports)
    assert set(yaml.safe_load(text)) == {"defaults", "enabled", "cache", "prefork"}
    audit = compose_group("audit")
    assert audit.enabled is True and audit.cache is True and audit.prefork is True
    assert audit.audit_config() == replace(AuditConfig(), prefork=True)
    values = {k: getattr(audit, k) for k in asdict(AuditConfig())}
    assert {k: type(v) for k, v in values.items()} == {k: type(v) for k, v in asdict(AuditConfig()).items()}
    swept = compose_group("audit", "audit.cover_min=0.12", "audit.one_pass=off").audit_config()
    assert (swept.cover_min, swept.one_pass) == (0.12, "off") and swept.leak_max == AuditConfig().leak_max


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
