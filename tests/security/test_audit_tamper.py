"""A script cannot forge its own Spatial verdict (issue #13): overriding or patching the audit's hooks, or
writing the report itself, gives a failing ``audit_tampered`` row, never a pass. Real sandboxed audits."""

from __future__ import annotations

import pytest

from prism_fast.audit import AuditConfig, audit_one
from prism_fast.audit.tamper import HOOKED_METHODS, static_evidence

FAILING = """from manim import *
class Bad(Scene):
{cls}    def construct(self):
{pre}        a = Text("Hello world").move_to(ORIGIN)
        b = Text("Overlapping").move_to(ORIGIN + RIGHT * 0.3)
        self.play(FadeIn(a), FadeIn(b), run_time=0.2)
        self.wait(0.1)
"""

RUNTIME_PATCH = """        k = [c for c in type(self).__mro__ if c.__name__ == "Aud" + "itHooks"][0]
        setattr(k, "_aud" + "it_snapshot", lambda s, label: None)
"""
EXIT_FORGE = """        import os
        open("../" + "audit_" + "report.json", "w").write('{"Bad": {}}')
        os._exit(0)
"""
OVERRIDE = """    def _audit_snapshot(self, label):
        return None
"""
PLAY_BYPASS = """    def play(self, *args, **kwargs):
        return super(Scene, self).play(*args, **kwargs)
"""


def script(cls: str = "", pre: str = "") -> str:
    return FAILING.format(cls=cls, pre=pre)


def test_the_layout_fails_without_tampering(tmp_path):
    row = audit_one("plain", script(), tmp_path, AuditConfig())
    assert row["audit_success"] == 1 and row["visual_structure_pass"] == 0 and not row.get("audit_tampered")


@pytest.mark.parametrize("name, cls, pre, evidence", [
    ("override", OVERRIDE, "", "defines:Bad._audit_snapshot"),
    ("play_bypass", PLAY_BYPASS, "", "defines:Bad.play"),
    ("runtime_patch", "", RUNTIME_PATCH, "patched:AuditHooks._audit_snapshot"),
    ("exit_forge", "", EXIT_FORGE, "no_completion_record"),
])
def test_tampering_is_a_failing_row(tmp_path, name, cls, pre, evidence):
    row = audit_one(name, script(cls, pre), tmp_path, AuditConfig())
    assert row["error_kind"] == "audit_tampered" and row["status"] == "audit_failed"
    assert row["visual_structure_pass"] == 0 and row["audit_success"] == 0
    assert evidence in row["audit_tampered"], row["audit_tampered"]


def test_ordinary_scripts_carry_no_evidence():
    ordinary = """from manim import *
class Ball(VGroup):
    def remove(self, *m):          # a Mobject subclass may define remove
        return super().remove(*m)
class S(Scene):
    def setup(self):
        self.title = Text("Play the render")
    def construct(self):
        self.play(Write(self.title))
"""
    assert static_evidence(ordinary) == []
    assert static_evidence("import prism_fast.audit\n") == ["import:prism_fast.audit"]
    assert static_evidence("x = open('audit_report.json')\n") == ["string:audit_report"]


def test_hooked_names_cover_the_audit_classes():
    from prism_fast.audit.config import AuditConfig as Cfg
    from prism_fast.audit.hooks import make_audit_scene
    from prism_fast.profile import REFERENCE
    import manim

    hooks = make_audit_scene(manim.Scene, Cfg(), REFERENCE).hooks
    defined = {n for n in vars(hooks) if not n.startswith("__")}
    assert defined <= HOOKED_METHODS, defined - HOOKED_METHODS
