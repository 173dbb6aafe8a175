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

from prism_fast.audit.atoms import background_of, camera_of, drawn_members, extract_atoms, play_timing
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.observations import STAND_IN, RawSnapshot
from prism_fast.audit.segments import SegmentLog

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


class _SceneState:
    """The audit's state of one scene instance, kept in the hooks' closure (never an attribute of the scene: a
    script's class or instance attribute of the same name must not stand in for it)."""

    def __init__(self, half, every_checkpoint: bool, save_images: bool):
        self.half = half
        self.segment_log = SegmentLog(every_checkpoint=every_checkpoint)
        self.save_images = save_images
        self.record = None
        self.plays: list = []  # per finished play: (duration, frozen wait, skipped by its section) -- the timeline


def make_audit_scene(base_scene, cfg: AuditConfig, profile, save_images: bool | None = None):
    """Build the AuditScene class on top of the original ``Scene`` class ``base_scene``.

    The hooks record raw snapshots only (``observations.RawSnapshot``); the verdict is computed by trusted code
    from them (``verdict.py``). ``save_images``: copy each snapshot's frame (default: ``AUDIT_SAVE_IMAGES``)."""
    from manim import config

    if save_images is None:
        save_images = os.environ.get("AUDIT_SAVE_IMAGES", "1") != "0"
    returns_self = profile.fixes("Q-SPATIAL-8")
    every_checkpoint = profile.fixes("Q-SPATIAL-7")
    skip_trackers = profile.fixes("Q-SPATIAL-10")
    skip_invisible = profile.fixes("Q-SPATIAL-11")
    image_rings = profile.fixes("Q-SPATIAL-12")
    group_points = profile.fixes("Q-SPATIAL-15")
    camera_frame = profile.fixes("Q-SPATIAL-1")
    sampled_curves = profile.fixes("Q-SPATIAL-13")
    once_per_object = profile.fixes("Q-SPATIAL-20")
    states: dict = {}  # id(scene) -> (scene, _SceneState)

    def state_of(scene, create: bool = True):
        entry = states.get(id(scene))
        if entry is not None and entry[0] is scene:
            return entry[1]
        if not create:
            return None
        # created lazily: module-level changes to config.frame_width/height are respected
        half = (float(getattr(config, "frame_width", 14.22)) / 2, float(getattr(config, "frame_height", 8.0)) / 2)
        st = _SceneState(half, every_checkpoint, save_images)
        states[id(scene)] = (scene, st)
        return st

    class AuditHooks:
        """The three hooks (+ helpers) as a mixin; ``AuditScene = AuditHooks + base_scene``."""

        def ensure_audit_vars(self):
            state_of(self)

        @property
        def audit_log(self):
            st = state_of(self, create=False)
            return st.segment_log.audit_log if st is not None else []

        @property
        def segment_snapshots(self):
            st = state_of(self, create=False)
            return st.segment_log.segments if st is not None else []

        def remove(self, *mobjects):
            st = state_of(self)
            msg = st.segment_log.on_remove(len(mobjects))
            if msg:
                _err().write(msg)
            result = super().remove(*mobjects)
            if returns_self:  # Q-SPATIAL-8 fixed: return the scene like the real method
                return result
            return None  # Q-SPATIAL-8 reference: the hooked remove returns None

        def play(self, *args, **kwargs):
            st = state_of(self)
            st.segment_log.on_play_start()
            super().play(*args, **kwargs)
            st.plays.append(play_timing(self))
            if self.mobjects:
                st.segment_log.on_snapshot(self._audit_snapshot(st.segment_log.next_label()))

        def render(self, preview=False):
            st = state_of(self)
            super().render(preview)
            st.segment_log.on_render_end()
            self.process_final_results()

        def _audit_snapshot(self, label):
            st = state_of(self)
            owners: dict = {}
            atoms = extract_atoms(self.mobjects, skip_value_trackers=skip_trackers, skip_invisible=skip_invisible,
                                  image_ring_order=image_rings, group_own_points=group_points,
                                  sampled_curves=sampled_curves, once_per_object=once_per_object, owners=owners)
            if not atoms:
                return None
            lx, ly = st.half
            center = None
            frame_mob = getattr(self.camera, "frame", None)
            if camera_frame and frame_mob is not None:  # Q-SPATIAL-1 fixed: OOB against the camera frame
                lx, ly = float(frame_mob.width) / 2, float(frame_mob.height) / 2
                center = np.asarray(frame_mob.get_center(), dtype=np.float64)[:2]
            dump = os.environ.get("PRISM_AUDIT_DUMP_ATOMS")
            if dump:  # fixture generation only: the snapshot's atoms as portable plain data
                _dump_atoms(atoms, f"{dump}.{type(self).__name__}.{label}.pkl")
            # the reference copies the frame at every snapshot; the fast path only when images are requested
            frame = _capture_frame(self) if (st.save_images or cfg.full_fidelity) else None
            picture = None
            if cfg.pictures:  # inspect pictures: a -ql raster of this checkpoint (the report is not involved)
                from prism_fast.audit.pictures import capture_checkpoint

                picture = capture_checkpoint(self, atoms, (lx, ly), center, err=_err())
            # what the video witness compares with the frames (audit/witness.py): raw, like the atoms
            return RawSnapshot(label, atoms, (lx, ly), center, frame=frame if st.save_images else None,
                               picture=picture, play=len(st.plays) - 1, camera=camera_of(self),
                               background=background_of(self), drawn=drawn_members(self.mobjects, owners))

        def process_final_results(self):
            st = state_of(self)
            msg = st.segment_log.finalize()
            if msg:
                _err().write(msg)
            log = st.segment_log
            kept = log.kept()
            where = {id(s): k for k, s in enumerate(kept)}
            name = type(self).__name__
            st.record = (name, kept, [where[id(s)] for s in log.segments], log.salvage, log.taken, list(st.plays))
            if st.save_images:
                from prism_fast.audit.pictures import write_snapshot_frames

                write_snapshot_frames(name, kept, err=_err())
            if cfg.pictures:
                from prism_fast.audit.pictures import write_segment_pictures

                write_segment_pictures(name, kept, err=_err())
            _err().write("\n" + json.dumps({name: STAND_IN}, indent=2, ensure_ascii=False) + "\n")

    def record_of(scene):
        """The scene's observations record after ``process_final_results`` (None before)."""
        st = state_of(scene, create=False)
        return None if st is None else st.record

    AuditScene = type("AuditScene", (AuditHooks, base_scene), {})
    AuditScene.hooks = AuditHooks
    AuditHooks.record_of = staticmethod(record_of)
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
