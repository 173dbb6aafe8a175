"""Fast path ≡ full-fidelity path on the bundled sample set: byte-identical audit reports (issue 4, deliverable 2).

The full path is the authors' rendering mode (1080p60 Cairo raster + PNG of every frame: ~1.5 min per bundled
sample on an idle 2-core machine, 5-10 min under load), so CI runs a fixed subset of one sample,
SAMPLE-ZH-000015, the bundled sample with the fewest animated seconds (5.7 s; Chinese text, MathTex, a loop).
Updater scenes are covered in CI by the spec fixture traced2 (dt updater + TracedPath, fast vs full in
test_audit_fixtures.py); the four bundled updater samples (EN-000003, EN-000013, ZH-000011, ZH-000012) and the
rest of the 48 are ``bench/audit_identity.py``, whose outcome is recorded in docs/bench_audit.md.
``PRISM_AUDIT_IDENTITY_IDS`` widens the subset (comma-separated ids, or ``all``), e.g.
``PRISM_AUDIT_IDENTITY_IDS=SAMPLE-ZH-000011`` (an ``always_redraw`` + ValueTracker sample).
"""

from __future__ import annotations

import os

import pytest

from bench.audit_identity import compare_one
from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import load_dataset

CI_SUBSET = ("SAMPLE-ZH-000015",)
TASKS = {t.id: t for t in load_dataset(bundled_dataset_path()).tasks}


def _subset() -> list[str]:
    wanted = os.environ.get("PRISM_AUDIT_IDENTITY_IDS", "").strip()
    if wanted == "all":
        return sorted(TASKS)
    return [w.strip() for w in wanted.split(",") if w.strip()] or list(CI_SUBSET)


@pytest.mark.slow
@pytest.mark.parametrize("sample_id", _subset())
def test_fast_and_full_fidelity_reports_are_byte_identical(sample_id, tmp_path):
    rec = compare_one(sample_id, TASKS[sample_id].reference_answer, tmp_path)
    assert rec["fast_row"]["audit_success"] == 1, rec
    assert rec["report_identical"], rec
    assert rec["row_identical"], rec
