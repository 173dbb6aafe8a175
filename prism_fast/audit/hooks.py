"""The instrumented Scene and the parity-safe fast path (spec spatial_audit.md §4, §5, §13.1).

Runs inside the audit child process. ``make_audit_scene`` returns a subclass of the *original* manim
``Scene`` that overrides exactly ``play``, ``remove`` and ``render``. ``install_fast_path`` turns off every
pixel/PNG/hash cost while keeping the per-frame ``update_to_time`` loop at the script's frame rate and the
real ``CairoRenderer.scene_finished`` (so the zero-play config flip of §5.2 happens as in the reference).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from prism_fast.audit.atoms import extract_atoms
from prism_fast.audit.cascade import check_snapshot
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.segments import SegmentLog, Snapshot, segment_report

_REAL = {}
# where the hooks' own stderr lines go; None = sys.stderr (the one-pass render keeps them off its stderr)
ERR_STREAM = None


def _err():
    return ERR_STREAM if ERR_STREAM is not None else sys.stderr


def install_fast_path() -> None:
    """No rasterisation, no PNG, no play hashing; renderer time still advances frame by frame."""
    from manim import config
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene.scene_file_writer import SceneFileWriter

    _REAL["update_frame"] = CairoRenderer.update_frame
    _REAL["get_frame"] = CairoRenderer.get_frame
    config.disable_caching = True  # play hashing off; a cache hit is impossible in png mode anyway

    def update_frame(self, scene=None, mobjects=None, include_submobjects=True, ignore_skipping=True, **kw):
        return None

    def render(self, scene, time, moving_mobjects):
        self.add_frame(None)  # advances renderer.time by 1/fps exactly as the real render does

    def freeze_current_frame(self, duration):
        dt = 1 / self.camera.frame_rate
        self.add_frame(None, num_frames=int(duration / dt))

    def save_static_frame_data(self, scene, static_mobjects):
        self.static_image = None
        return None

    CairoRenderer.update_frame = update_frame
    CairoRenderer.render = render
    CairoRenderer.freeze_current_frame = freeze_current_frame
    CairoRenderer.save_static_frame_data = save_static_frame_data
    SceneFileWriter.write_frame = lambda self, frame_or_renderer, num_frames=1: None
    SceneFileWriter.save_final_image = lambda self, image: None


def _capture_frame(scene):
    """The RGBA frame the reference stores with each snapshot (only when images are requested)."""
    try:
        update = _REAL.get("update_frame", type(scene.renderer).update_frame)
        update(scene.renderer, scene)
        return np.array(scene.renderer.get_frame()).copy()
    except Exception as exc:  # the reference swallows frame errors here
        sys.stderr.write(f"实时截图失败: {exc}\n")
        return None


def make_audit_scene(base_scene, cfg: AuditConfig, profile):
    """Build the AuditScene class on top of the original ``Scene`` class ``base_scene``."""
    from manim import config

    returns_self = profile.fixes("Q-SPATIAL-8")
    every_checkpoint = profile.fixes("Q-SPATIAL-7")
    skip_trackers = profile.fixes("Q-SPATIAL-10")
    per_component = profile.fixes("Q-SPATIAL-14")
    composite_parent = profile.fixes("Q-SPATIAL-18")
    skip_invisible = profile.fixes("Q-SPATIAL-11")
    image_rings = profile.fixes("Q-SPATIAL-12")
    group_points = profile.fixes("Q-SPATIAL-15")
    filled_lines = profile.fixes("Q-SPATIAL-16")
    user_keywords = profile.fixes("Q-SPATIAL-17")
    camera_frame = profile.fixes("Q-SPATIAL-1")
    sampled_curves = profile.fixes("Q-SPATIAL-13")
    once_per_object = profile.fixes("Q-SPATIAL-20")

    class AuditHooks:
        """The three hooks (+ helpers) as a mixin; ``AuditScene = AuditHooks + base_scene``."""

        def ensure_audit_vars(self):
            # created lazily: module-level changes to config.frame_width/height are respected
            if not hasattr(self, "auditor"):
                fw = float(getattr(config, "frame_width", 14.22))
                fh = float(getattr(config, "frame_height", 8.0))
                self.auditor = (fw / 2, fh / 2)
            if not hasattr(self, "segment_log"):
                self.segment_log = SegmentLog(every_checkpoint=every_checkpoint)
            if not hasattr(self, "_save_audit_images"):
                self._save_audit_images = os.environ.get("AUDIT_SAVE_IMAGES", "1") != "0"

        @property
        def audit_log(self):
            return self.segment_log.audit_log if hasattr(self, "segment_log") else []

        @property
        def segment_snapshots(self):
            return self.segment_log.segments if hasattr(self, "segment_log") else []

        def remove(self, *mobjects):
            self.ensure_audit_vars()
            msg = self.segment_log.on_remove(len(mobjects))
            if msg:
                _err().write(msg)
            result = super().remove(*mobjects)
            if returns_self:  # Q-SPATIAL-8 fixed: return the scene like the real method
                return result
            return None  # Q-SPATIAL-8 reference: the hooked remove returns None

        def play(self, *args, **kwargs):
            self.ensure_audit_vars()
            self.segment_log.on_play_start()
            super().play(*args, **kwargs)
            if self.mobjects:
                self.segment_log.on_snapshot(self._audit_snapshot(self.segment_log.next_label()))

        def render(self, preview=False):
            self.ensure_audit_vars()
            super().render(preview)
            self.segment_log.on_render_end()
            self.process_final_results()

        def _audit_snapshot(self, label):
            atoms = extract_atoms(self.mobjects, skip_value_trackers=skip_trackers, skip_invisible=skip_invisible,
                                  image_ring_order=image_rings, group_own_points=group_points,
                                  sampled_curves=sampled_curves, once_per_object=once_per_object)
            if not atoms:
                return None
            lx, ly = self.auditor
            center = None
            frame_mob = getattr(self.camera, "frame", None)
            if camera_frame and frame_mob is not None:  # Q-SPATIAL-1 fixed: OOB against the camera frame
                lx, ly = float(frame_mob.width) / 2, float(frame_mob.height) / 2
                center = np.asarray(frame_mob.get_center(), dtype=np.float64)[:2]
            issues = check_snapshot(atoms, cfg, lx, ly, center=center, per_component_ids=per_component,
                                    composite_needs_parent=composite_parent,
                                    filled_lines_not_line_like=filled_lines,
                                    user_name_keywords=user_keywords)
            dump = os.environ.get("PRISM_AUDIT_DUMP_ATOMS")
            if dump:  # fixture generation only: the snapshot's atoms as portable plain data
                _dump_atoms(atoms, f"{dump}.{type(self).__name__}.{label}.pkl")
            # the reference copies the frame at every snapshot; the fast path only when images are requested
            frame = _capture_frame(self) if (self._save_audit_images or cfg.full_fidelity) else None
            _ENGINE_TOTALS.add(issues.stats, len(atoms))
            picture = None
            if cfg.pictures:  # inspect pictures: a -ql raster of this checkpoint, after the checks (report unchanged)
                from prism_fast.audit.pictures import capture_checkpoint

                picture = capture_checkpoint(self, atoms, issues, (lx, ly), center, err=_err())
            return Snapshot(label, issues.out_of_bounds, issues.overlaps, issues.leaks, frame=frame, picture=picture)

        def process_final_results(self):
            self.ensure_audit_vars()
            msg = self.segment_log.finalize()
            if msg:
                _err().write(msg)
            segments = self.segment_log.segments
            if self._save_audit_images:
                for i, snap in enumerate(segments):
                    _save_png(snap, f"audit_{'error' if snap.has_issue() else 'sample'}_{i}.png")
            if cfg.pictures:
                from prism_fast.audit.pictures import write_segment_pictures

                write_segment_pictures(type(self).__name__, segments, err=_err())
            self.final_report = {type(self).__name__: segment_report(segments)}
            _err().write("\n" + json.dumps(self.final_report, indent=2, ensure_ascii=False) + "\n")

    AuditScene = type("AuditScene", (AuditHooks, base_scene), {})
    AuditScene.hooks = AuditHooks
    return AuditScene


def _dump_atoms(atoms, path: str) -> None:
    import dataclasses
    import pickle

    rows = []
    for a in atoms:
        row = dataclasses.asdict(a)
        row["cls_key"] = f"{a.cls_key.__module__}.{a.cls_key.__qualname__}"
        rows.append(row)
    with open(path, "wb") as fh:
        pickle.dump(rows, fh)


def _save_png(snap: Snapshot, filename: str) -> None:
    if snap.frame is None:
        sys.stderr.write(f"截图缺失 ({filename})\n")
        return
    try:
        from PIL import Image

        Image.fromarray(snap.frame).save(filename)
    except Exception as exc:
        sys.stderr.write(f"截图失败 ({filename}): {exc}\n")


class _EngineTotals:
    """Process-wide geometry counters, written to the meta file (not part of the report)."""

    def __init__(self):
        self.snapshots = 0
        self.atoms_max = 0
        self.tests = 0
        self.backends: set = set()
        self.matplotlib_polygons = 0

    def add(self, stats, n_atoms):
        self.snapshots += 1
        self.atoms_max = max(self.atoms_max, n_atoms)
        if stats is not None:
            self.tests += stats.tests
            self.backends.add(stats.backend)
            self.matplotlib_polygons += stats.matplotlib_polygons

    def as_dict(self):
        return {"snapshots": self.snapshots, "atoms_max": self.atoms_max, "point_edge_tests": self.tests,
                "backends": sorted(self.backends), "matplotlib_polygons": self.matplotlib_polygons}


_ENGINE_TOTALS = _EngineTotals()
