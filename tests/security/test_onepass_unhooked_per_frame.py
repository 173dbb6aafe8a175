"""Red team of the one-pass audit (audit/onepass*.py).

Unhooked scenes: a scene the reference audit renders without hooks (MovingCameraScene, ThreeDScene; Q-SPATIAL-1)
reports ``{}`` whatever it does, but the audit-only run still *steps* it at 60 fps, so script code at the frame
times can fail there and not in the -ql render (the audit row's ``scene_errors``, ``error_msg``, ``error_kind``
show it). The hooked scene's runtime guards (script rate_func, script Animation class, updaters) never ran for an
unhooked scene, and the static rule lets a camera-frame move (``unhooked_only:camera.frame``) or no camera access
at all through: the render's ``{}`` was shared with none of the audit's errors. Fixed: the observers check every
play of an unhooked scene as they check a hooked one.

A NameError the audit never meets: see NO_IMPORT."""

from __future__ import annotations

import pytest

from prism_fast.audit import onepass, onepass_store
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_one
from prism_fast.profile import REFERENCE

def _onepass_rows(tmp_path, scripts: dict[str, str]) -> dict[str, dict]:
    """``render_with_onepass`` of each named script (sample id ``S-<name>``) through one prefork worker."""
    from prism_fast.execute.render import RenderConfig, prefork_worker

    cfg = RenderConfig(timeout_s=60)
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    try:
        return {name: onepass.render_with_onepass(f"S-{name}", script, tmp_path / "onepass", cfg, REFERENCE, None,
                                                  worker.run, AuditConfig().to_dict())
                for name, script in scripts.items()}
    finally:
        worker.close()


# the rate function raises only for 0 < t < 0.05: the 60 fps audit meets t = 1/60, the 15 fps render never does
EARLY = '''from manim import *


def early(t):
    if 0 < t < 0.05:
        raise ValueError("only at 60 fps")
    return t


class Pan(MovingCameraScene):
    def construct(self):
        self.add(Square())
        self.play(self.camera.frame.animate.scale(1.5), rate_func=early, run_time=1)
'''

# a script Animation class whose per-frame code does the same, in a ThreeDScene (no camera access at all)
CUSTOM_ANIMATION = '''from manim import *


class Early(Animation):
    def interpolate_mobject(self, alpha):
        if 0 < alpha < 0.05:
            raise ValueError("only at 60 fps")


class Solid(ThreeDScene):
    def construct(self):
        self.play(Early(Square()), run_time=1)
'''

FIELDS = ("audit_success", "segment_count", "error_msg", "status", "error_kind", "scene_errors")


@pytest.mark.slow
@pytest.mark.parametrize("script", [EARLY, CUSTOM_ANIMATION], ids=["rate_func", "animation_class"])
def test_unhooked_scene_with_script_code_per_frame_is_not_shared(tmp_path, script):
    row = _onepass_rows(tmp_path, {"x": script})["x"]
    assert row["success"]  # the render never meets the failing frame time
    only = audit_one("S-x", script, tmp_path / "audit_only", AuditConfig())
    assert only["scene_errors"]  # the audit-only run does
    shared = row.pop("_onepass_audit", None)
    if shared is not None:  # sharing is only allowed where the row is the audit-only run's
        got = onepass_store.write_shared_audit("S-x", "x.py", shared, tmp_path / "pipeline_audit")
        assert {k: got[k] for k in FIELDS} == {k: only[k] for k in FIELDS}
    assert row["onepass"] == "separate" and row["manim_executions"] == 1


# Red team: no `from manim import *`. The reference audit runs the module in a namespace that already holds
# manim.__dict__ (spatial_audit.md §3 step 4), so `Scene`, `Square`, ... resolve there; the render's module has
# only what it imports and fails with a NameError. The failure was accepted as "the audit's" and the salvaged {}
# shared (audit_success 0), where the audit-only run reports the scene (audit_success 1).
NO_IMPORT = '''import numpy as np


class Lone(Scene):
    def construct(self):
        a = Square(side_length=2, fill_opacity=0.5)
        b = Square(side_length=2, fill_opacity=0.5).shift(RIGHT)
        self.play(FadeIn(a), FadeIn(b), run_time=0.2)
'''


@pytest.mark.slow
def test_a_name_error_on_a_manim_name_is_not_the_audits(tmp_path):
    row = _onepass_rows(tmp_path, {"x": NO_IMPORT})["x"]
    assert not row["success"] and "NameError" in (row["stderr_tail"] or "")
    only = audit_one("S-x", NO_IMPORT, tmp_path / "audit_only", AuditConfig())
    assert only["audit_success"] == 1 and only["segment_count"] == 1
    shared = row.pop("_onepass_audit", None)
    if shared is not None:
        got = onepass_store.write_shared_audit("S-x", "x.py", shared, tmp_path / "pipeline_audit")
        assert {k: got[k] for k in FIELDS} == {k: only[k] for k in FIELDS}
    assert row["onepass"] == "separate" and row["manim_executions"] == 1


# Red team: the render child's `Scene` is the observers' hooked subclass of manim's Scene (as the audit's is), so a
# script that looks at it sees another class than a plain render does. A different video with nothing flagged:
IDENTITY = '''from manim import *


class Ident(%s):
    def construct(self):
        %s
        self.add(Square(side_length=2, fill_opacity=0.5))
        self.play(FadeIn(Circle()), run_time=0.3)
'''
IDENTITY_CASES = {
    "isinstance_unhooked": IDENTITY % ("MovingCameraScene",
                                       "if isinstance(self, Scene): self.add(Triangle(fill_opacity=1))"),
    "issubclass_hooked": IDENTITY % ("Scene",
                                     "if issubclass(MovingCameraScene, Scene): self.add(Triangle(fill_opacity=1))"),
    "mro": IDENTITY % ("Scene", "if len(type(self).mro()) > 3: self.add(Triangle(fill_opacity=1))"),
    "dir": IDENTITY % ("Scene", "if len(dir(self)) > 10: self.add(Triangle(fill_opacity=1))"),
    "manim_scene": IDENTITY % ("MovingCameraScene", "if self.camera.frame and manim.Scene: pass"),
}


@pytest.mark.parametrize("name", sorted(IDENTITY_CASES))
def test_a_script_looking_at_the_scene_class_is_not_eligible(name):
    assert any(r.startswith("scene_identity:") for r in onepass.static_reasons(IDENTITY_CASES[name])), name
    # a Scene base, star import and plain use stay eligible, and so do type hints naming Scene (evaluated at most
    # into __annotations__, which only a refused dunder read could look at)
    assert onepass.static_reasons(IDENTITY % ("Scene", "pass")) == []
    hinted = "SCENES: dict[str, type[Scene]] = {}\n\n\ndef pick(s: Scene) -> Scene:\n    return s\n\n\n"
    assert onepass.static_reasons(IDENTITY.replace("\n\nclass", "\n\n" + hinted + "class", 1)
                                  % ("Scene", "pass")) == []


# manim's own updater in an unhooked scene (the ambient camera rotation: `lambda m, dt: m.increment_value(rate *
# dt)`, no script code at the frame times): still shared, with the audit-only run's row; a script updater is not
AMBIENT = '''from manim import *


class Spin(ThreeDScene):
    def construct(self):
        self.set_camera_orientation(phi=60 * DEGREES, theta=30 * DEGREES)
        self.begin_ambient_camera_rotation(rate=0.3)
        self.play(FadeIn(Cube(side_length=2)), run_time=0.4)
        self.wait(0.3)
'''


@pytest.mark.slow
def test_manims_own_updater_in_an_unhooked_scene_still_shares_and_a_script_updater_does_not(tmp_path):
    # an always_redraw the static rule approves: manim's lambda, but its closure holds the script's function
    script_updater = AMBIENT.replace("self.wait(0.3)", "self.add(always_redraw(lambda: Dot(ORIGIN)))\n"
                                     "        self.wait(0.3)")
    assert onepass.static_reasons(script_updater) == []
    rows = _onepass_rows(tmp_path, {"ambient": AMBIENT, "script_updater": script_updater})
    row = rows["ambient"]
    assert row["success"] and row["onepass"] == "shared" and row["manim_executions"] == 1, row["onepass_reasons"]
    only = audit_one("S-ambient", AMBIENT, tmp_path / "audit_only", AuditConfig())
    got = onepass_store.write_shared_audit("S-ambient", "x.py", row.pop("_onepass_audit"), tmp_path / "pipe")
    assert {k: got[k] for k in FIELDS} == {k: only[k] for k in FIELDS}
    other = rows["script_updater"]
    assert other["success"] and other["onepass"] == "separate" and "_onepass_audit" not in other
    assert "unhooked_updater" in other["onepass_reasons"]


# `class P(Scene, MovingCameraScene)`: in a plain render Scene is MovingCameraScene's base, so no consistent MRO
# exists (TypeError, no video); with the observers' Scene (a subclass, as in the audit) the class builds and the
# one-pass render made a video the plain render does not
MIXED_BASES = '''from manim import *


class Cam(Scene, MovingCameraScene):
    def construct(self):
        a = Square(side_length=2, fill_opacity=0.5)
        self.play(FadeIn(a), run_time=0.2)
        self.play(self.camera.frame.animate.scale(0.5), run_time=0.3)
'''


# (also: the fallback's "plain" render used to find the observed run's video, trusted as a success without
# rendering under the reference profile (Q-FUNNEL-2), or its render-cache entry)
@pytest.mark.slow
@pytest.mark.parametrize("cached", [False, True], ids=["no_cache", "render_cache"])
def test_hooked_and_unhooked_scene_bases_render_as_a_plain_render(tmp_path, cached):
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    cfg = RenderConfig(timeout_s=60, cache_dir=str(tmp_path / "cache") if cached else None)
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    try:
        row = onepass.render_with_onepass("S-x", MIXED_BASES, tmp_path / "onepass", cfg, REFERENCE, None,
                                          worker.run, AuditConfig().to_dict())
        ref = render_one("S-x", MIXED_BASES, tmp_path / "plain", RenderConfig(timeout_s=60), runner=worker.run)
        again = render_one("S-x", MIXED_BASES, tmp_path / "again", cfg, runner=worker.run)  # a later run's render
    finally:
        worker.close()
    assert not ref["success"] and "consistent method resolution" in (ref["stderr_tail"] or "")
    for got in (row, again):
        assert got["success"] == ref["success"] and bool(got.get("video_path")) == bool(ref.get("video_path"))
    assert "_onepass_audit" not in row and row["onepass"] in ("fallback", "separate")
