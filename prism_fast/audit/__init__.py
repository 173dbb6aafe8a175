"""prism_fast.audit: the spatial auditor (spec spatial_audit.md).

Public API: ``audit_one(sample_id, script_text, work_dir, cfg, profile) -> row`` and ``AuditConfig``;
``audit_batch`` for a folder. Pure cores: ``cascade`` (geometry rules), ``polygon`` (point-in-polygon
engine), ``segments``, ``rows``, ``ids``, ``inject``, ``observations`` (the child's raw geometry as data) and
``verdict`` (the report from it, in trusted code only). Manim is imported only inside the child process
(``child``, ``hooks``, ``atoms``, ``shims``), which writes observations, never a report.
"""

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_batch, audit_file, audit_one

__all__ = ["AuditConfig", "audit_batch", "audit_file", "audit_one"]
