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
# the toolkit keeps its frame half-size and its segment log in scene attributes found by hasattr: a script's own
# value of the same name stands in for them there (a pass with no hook touched); prism_fast keeps them elsewhere
SHADOW_INSTANCE = """        self.__dict__.update({"aud" + "itor": (100.0, 100.0)})
"""
SHADOW_CLASS = """        setattr(type(self), "segment" + "_log", None)
"""
# a report and observations file written by the script itself, which then goes on: both are the trusted exit's
FORGE_AND_GO_ON = """        open("../" + "audit_" + "report.json", "w").write('{"Bad": {"Segment_0": {}}}')
        open("../" + "audit_" + "observations.json", "w").write('{"version": 1, "arrays": [], "scenes": []}')
"""
# observations of a clean layout written by the script in the audit's place, then the trusted exit skipped
FORGED_OBSERVATIONS = """        import json
        doc = {"version": 1, "arrays": [], "scenes": [{"name": "Bad", "snapshots": [{"label": "Step_0",
               "table": [], "atoms": [], "half": [7.1, 4.0], "center": None}], "segments": [0], "salvage": False,
               "taken": 1}]}
        open("../audit_" + "observations.json", "w").write(json.dumps(doc))
"""
# the sealing code's module patched (found without naming prism_fast): every snapshot emptied before it is sealed
PATCH_WRITER = """        import sys
        m = [v for k, v in list(sys.modules.items()) if k.endswith(".execute.observers")][0]
        real = m.write_result
        def write(ctx, doc):
            for sc in doc.get("scenes", []):
                for sn in sc.get("snapshots", []):
                    sn["atoms"] = []
            return real(ctx, doc)
        m.write_result = write
"""
# a handler that would rewrite the observations after the trusted exit wrote them: it must never run
ATEXIT_REWRITE = """        import atexit
        atexit.register(lambda: open("../audit_" + "observations.json", "w").write("{}"))
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
    ("shadow_instance", "", SHADOW_INSTANCE, "shadows:auditor"),
    ("shadow_class", "", SHADOW_CLASS, "shadows:Bad.segment_log"),
    ("patch_writer", "", PATCH_WRITER, "patched:prism_fast.execute.observers.write_result"),
    ("forged_sysexit", "", FORGED_OBSERVATIONS + "        raise SystemExit(0)\n", "observations:unsealed"),
    ("forged_interrupt", "", FORGED_OBSERVATIONS + "        raise KeyboardInterrupt\n", "observations:unsealed"),
    ("forged_readonly", "", FORGED_OBSERVATIONS + "        import os\n        os.chmod('../audit_' + "
                                                  "'observations.json', 0o444)\n", "observations:unsealed"),
])
def test_tampering_is_a_failing_row(tmp_path, name, cls, pre, evidence):
    row = audit_one(name, script(cls, pre), tmp_path, AuditConfig())
    assert row["error_kind"] == "audit_tampered" and row["status"] == "audit_failed"
    assert row["visual_structure_pass"] == 0 and row["audit_success"] == 0
    assert evidence in row["audit_tampered"], row["audit_tampered"]


def test_files_the_script_writes_are_not_its_verdict(tmp_path):
    row = audit_one("forge", script(pre=FORGE_AND_GO_ON), tmp_path, AuditConfig())
    assert row["audit_success"] == 1 and row["visual_structure_pass"] == 0 and not row.get("audit_tampered")
    report = row["visual_audit_report"]
    assert report["Bad"]["Segment_0"]["overlaps"], report  # computed from what the audit saw, not the forgery


def test_no_script_code_runs_after_the_sealed_write(tmp_path):
    row = audit_one("late", script(pre=ATEXIT_REWRITE), tmp_path, AuditConfig())
    assert row["audit_success"] == 1 and row["visual_structure_pass"] == 0 and not row.get("audit_tampered")


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
