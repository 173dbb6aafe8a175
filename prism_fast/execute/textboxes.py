"""Exact text boxes from the render: what PADVC's OCR would look for, recorded by the render itself (issue #18).

The ``-ql`` render executes the scene, so every ``Text``, ``MarkupText``, ``Paragraph``, ``Code``, ``Tex``,
``MathTex`` and number mobject, and each of their glyphs, has an exact position in every frame it writes. This
module records, for **every frame written to the video**, the pixel box of every visible glyph of every
text-like mobject, grouped by mobject, and hands the record to the trusted parent.

Child side (:func:`install_from_env`, called by the prefork worker's forked child right before manim's CLI
``main()``, like ``texcache.install_from_env`` and ``observers.install_from_env``): passive wrappers around
methods of manim's Cairo renderer path (``encode_and_write_frame`` is wrapped only to count the frames the encoder
got). Nothing they do changes a frame (tested: byte-identical mp4):

* ``CairoRenderer.save_static_frame_data`` / ``update_frame``: remember *what* was just drawn on the camera's
  pixel array (the static layer of the current play, then the mobjects drawn over it), in draw order;
* ``SceneFileWriter.write_frame``: the frame(s) being written are exactly that pixel array, so the boxes of the
  last drawn state are computed (lazily, once per drawn state) and appended ``num_frames`` times (run-length).

Boxes (per glyph = per family member with points of a text-like mobject):

* text-like: instances of ``Text``, ``MarkupText``, ``Paragraph``, ``Code``, ``SingleStringMathTex`` (``Tex``,
  ``MathTex``, ``Title``, ``BulletedList``), ``DecimalNumber`` (``Integer``); the outermost one owns its
  family. A text's ``BackgroundRectangle``, ``Title.underline`` and ``Code.background`` are not glyphs. SVG glyph
  paths (``VMobjectFromSVGPath``, ``Brace`` excepted) drawn outside their text (a play's static members are drawn
  one by one) are attributed to the text of the scene they belong to; those under no text of the scene (the pieces
  ``TransformMatchingShapes`` animates) form one ``fragment`` owner;
* geometry: the exact bounds of the glyph's cubic Bézier outline (its curve extrema, computed only where the
  control points could change the pixel extent), padded by half the
  stroke width when a stroke is drawn, mapped with the camera's frame (centre, width, height; a moving camera
  included; cameras that project points, e.g. ``ThreeDCamera``, through their own
  ``transform_points_pre_display``) to pixels: x = (X − cx)·W/fw + W/2, y = (cy − Y)·H/fh + H/2; the pixel
  extent is ``[floor(x0), ceil(x1) − 1]`` (the pixels the outline touches), clipped to the frame; a glyph
  entirely outside the frame is dropped;
* opacity: a glyph counts when its fill or a drawn stroke has alpha > 0 and its outline is not collapsed (a glyph
  ``Write`` has not reached); the owner keeps the largest alpha (consumers threshold it: PADVC's
  ``scene_min_opacity``);
* z-order: the draw order is the camera's own (``get_mobjects_to_display``: z-index, then family order; the
  static layer of a play first, then what is drawn over it). A glyph is hidden when a later-drawn, fully opaque
  filled mobject with one outline contains its box (corner test against the outline's anchors, conservative
  for curved outlines; draw positions are asked of the camera only when such a fill's extent contains a glyph).
  Partial occlusion is not clipped.

Cost: computed once per drawn state (a ``wait`` is one state for all its frames; static layers once per play);
numpy over the concatenated outline points; about 2 % of the render's CPU on the bundled set
(``python -m bench.padvc_bench --render DIR``, docs/bench_padvc.md).

Consumer side (:func:`load_sidecar`, :class:`SceneBoxes`, :func:`line_boxes`): per frame, each text's glyph boxes
grouped into the text lines OCR would detect; ``prism_fast.video.ocr.SceneTextMasker`` turns them into masks.

Hand-off (the sandbox: the script can write only its scratch dir): the parent asks for a record with an
environment variable naming a random file in the scratch dir and a random nonce (:func:`plan`); the child pops
the variable before the script runs and writes the file at exit (atexit, after the script's own exit handlers).
After the child and everything it started are gone, the parent copies the file out with
``sandbox.copy_regular_file`` (``O_NOFOLLOW``, regular file, size-bounded), validates it (:func:`collect`: format,
nonce, bounds, the child's own tamper evidence) and writes a normalised sidecar ``<id>.textboxes.json`` next to
the video, bound to the video's sha256. Statuses: ``ok``; ``tampered`` (the script references the recorder's
names or the frame path's hooks — :func:`static_evidence` —, the run-time guard found a hook replaced, or the
file fails validation); ``missing`` (no file: the process died before its exit handlers); ``unsupported`` (the
child recorded frames it could not account for, e.g. the OpenGL renderer). PADVC uses only ``ok`` sidecars
whose video hash and frame count match the decoded video, else falls back to OCR and records why.

Known limits: code in the same interpreter can reach any object (``gc``), so a determined script that names none
of the internals could find the nonce and rewrite the record in memory; it would then also have to keep the
boxes consistent with the video's frame count. Only the prefork backend installs the recorder.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

ENV = "PRISM_FAST_TEXTBOXES"
FORMAT = "prism_fast.textboxes.v1"
SIDECAR_SUFFIX = ".textboxes.json"
MAX_BYTES = 64 << 20          # the child's record, as copied out of the scratch dir
MAX_FRAMES = 10_000_000
KINDS = ("text", "markup", "paragraph", "code", "tex", "number", "fragment")

# Names whose appearance in a script is evidence that it reaches for the recorder or the frame path it hooks.
TAMPER_NAMES = frozenset({
    "update_frame", "write_frame", "save_static_frame_data", "get_mobjects_to_display", "capture_mobjects",
    "add_frame", "freeze_current_frame", "encode_and_write_frame", "textboxes", "_TB_RECORDER",
})
TAMPER_STRINGS = ("prism_fast", "PRISM_FAST", "textboxes", ".tb_", "_TB_RECORDER")


# ==========================================================================================================
# Child side
# ==========================================================================================================

_TB_RECORDER = None


class _Layer:
    """The glyphs and potential occluders of one capture (one ``update_frame`` call), in draw order."""

    __slots__ = ("owners", "glyphs", "occluders", "grouped", "keys")

    def __init__(self):
        self.owners: list = []      # (owner id, kind)
        self.glyphs: list = []      # (member id, owner index, draw position, x0, y0, x1, y1, alpha) in pixels
        self.occluders: list = []   # (draw position, bbox (x0, y0, x1, y1), polygon px (k×2))
        self.grouped = None         # _grouped() cache
        self.keys = None            # {(owner id, member id)} cache


class _Recorder:
    def __init__(self, req: dict):
        self.file = str(req["file"])
        self.nonce = str(req["nonce"])
        self.contents: list = []
        self._cid: dict = {}
        self.runs: list = []
        self.frames = 0
        self.encoded = 0
        self.evidence: list[str] = []
        self.sec = 0.0
        self.updates = 0
        self.states = 0
        self.size = None
        self.in_static = False
        self.static = None       # [camera, scene, mobjects, include_sub, layer or None] of the play's static image
        self.pending = None      # (entry, static entry or None) of the last capture
        self.current = None      # content id of ``pending``
        self.t = None            # manim types, filled by _install
        self.instances: dict = {}   # renderers and file writers the hooks saw (checked for overrides at exit)
        self.owner_map = None       # (scene, map) of the current play, see _owner_map

    def seen(self, obj) -> None:
        if id(obj) not in self.instances:
            self.instances[id(obj)] = obj

    def flag(self, reason: str) -> None:
        if reason not in self.evidence and len(self.evidence) < 50:
            self.evidence.append(reason)

    # -- capture ---------------------------------------------------------------------------------------------
    def on_capture(self, renderer, scene, mobjects, include_sub: bool) -> None:
        self.updates += 1
        entry = [renderer.camera, scene, mobjects, include_sub, None]
        if self.in_static:
            self.static = entry
            return
        static = self.static if getattr(renderer, "static_image", None) is not None else None
        self.pending = (entry, static)
        self.current = None

    def on_write(self, num_frames: int) -> None:
        n = int(num_frames)
        if n <= 0:
            return
        if self.current is None:
            if self.pending is None:
                self.flag("unsupported:write_without_capture")
                cid = -1
            else:
                cid = self._content()
            self.current = cid
        cid = self.current
        if self.runs and self.runs[-1][0] == cid:
            self.runs[-1][1] += n
        else:
            self.runs.append([cid, n])
        self.frames += n

    # -- boxes -----------------------------------------------------------------------------------------------
    def _content(self) -> int:
        entry, static = self.pending
        self.states += 1
        layers = []
        if static is not None:
            if static[4] is None:
                static[4] = self._layer(*static[:4])
            layers.append(static[4])
        layers.append(self._layer(*entry[:4], under=layers[0] if layers else None))
        content = _compose(layers, self.size)
        cid = self._cid.get(content)
        if cid is None:
            cid = self._cid[content] = len(self.contents)
            self.contents.append(content)
        return cid

    def _owner_map(self, scene) -> dict:
        """id(member) → (id(owner), kind) for the glyphs of every text in the scene, and → None for the members of
        other SVG mobjects; built once per play (the renderer draws a play's static mobjects as loose members)."""
        if self.owner_map is not None and self.owner_map[0] is scene:
            return self.owner_map[1]
        t = self.t
        out: dict = {}
        roots = list(scene.mobjects) + list(getattr(scene, "foreground_mobjects", []))
        stack = list(reversed(roots))
        while stack:
            m = stack.pop()
            if id(m) in out:
                continue
            kind = t.kind_of(type(m))
            if kind is not None:
                key = (id(m), kind)
                excluded = _excluded(m, t)
                for f in m.get_family():
                    if id(f) not in excluded:
                        out.setdefault(id(f), key)
            elif t.svg_types(type(m))[0]:
                for f in m.get_family():
                    out.setdefault(id(f), None)
            else:
                stack.extend(reversed(m.submobjects))
        self.owner_map = (scene, out)
        return out

    def _layer(self, camera, scene, mobjects, include_sub: bool, under: _Layer | None = None) -> _Layer:
        """The glyphs and occluders of one capture; ``under``: the layer it is drawn over (its glyphs can be
        covered by this layer's opaque fills)."""
        import numpy as np

        t = self.t
        pw, ph = int(camera.pixel_width), int(camera.pixel_height)
        if self.size is None:
            self.size = (pw, ph)
        elif self.size != (pw, ph):
            self.flag("unsupported:pixel_size_changed")
        layer = _Layer()
        glyphs: list = []      # (member, owner index)
        occl: list = []
        loose: list = []       # members drawn outside any text or SVG they belong to (a play's static members)
        owner_at: dict = {}    # id(owner) → owner index in this layer
        visited: set = set()   # the drawn list repeats members of earlier entries' families (moving mobjects)
        if not include_sub:
            self.flag("unsupported:capture_without_submobjects")
            return layer
        kind_of, svg_types = t.kind_of, t.svg_types
        for top in mobjects:
            stack = [(top, False, -1)]
            while stack:
                m, in_svg, owner = stack.pop()
                if id(m) in visited:
                    continue
                visited.add(id(m))
                if owner < 0:
                    kind = kind_of(type(m))
                    if kind is not None:
                        owner = owner_at.setdefault(id(m), len(layer.owners))
                        if owner == len(layer.owners):
                            layer.owners.append((id(m), kind))
                        excluded = _excluded(m, t)
                        if excluded:
                            for sub in reversed(m.submobjects):
                                if id(sub) not in excluded:
                                    stack.append((sub, True, owner))
                            if len(m.points) and id(m) not in excluded:
                                glyphs.append((m, owner))
                            continue
                if len(m.points):
                    if owner >= 0:
                        glyphs.append((m, owner))
                    elif in_svg:
                        if _opaque_fill(m):
                            occl.append(m)
                    else:
                        loose.append(m)
                subs = m.submobjects
                if subs:
                    svg = in_svg or svg_types(type(m))[0]
                    for sub in reversed(subs):
                        stack.append((sub, svg, owner))
        if loose:
            owners = self._owner_map(scene)
            fragments = -1
            for m in loose:
                key = owners.get(id(m), False)
                if key is None or (key is False and not svg_types(type(m))[1]):   # not a glyph
                    if _opaque_fill(m):
                        occl.append(m)
                    continue
                if key is False:         # an SVG path under no text of the scene: an animated piece of one
                    if fragments < 0:
                        fragments = len(layer.owners)
                        layer.owners.append((-1, "fragment"))
                    glyphs.append((m, fragments))
                    continue
                idx = owner_at.get(key[0])
                if idx is None:
                    idx = owner_at[key[0]] = len(layer.owners)
                    layer.owners.append(key)
                glyphs.append((m, idx))
        boxes = _glyph_boxes(camera, [g for g, _ in glyphs], t, np) if glyphs else []
        kept = [(m, owner, box) for (m, owner), box in zip(glyphs, boxes) if box is not None]
        # occluders: opaque fills whose extent contains a glyph box of this layer or of the one below; only then
        # are draw positions needed (the camera's own order: z-index, then family order)
        cands = []
        if occl and (kept or (under is not None and under.glyphs)):
            gb = np.array([b[:4] for _, _, b in kept] + ([g[3:7] for g in under.glyphs] if under is not None else []),
                          dtype=float)
            for m in occl:
                bb = _px_bbox(camera, m, t, np)
                if bb is not None and ((gb[:, 0] >= bb[0]) & (gb[:, 1] >= bb[1]) & (gb[:, 2] + 1 <= bb[2]) &
                                       (gb[:, 3] + 1 <= bb[3])).any():
                    cands.append(m)
        pos: dict = {}
        if cands:
            for i, mob in enumerate(camera.get_mobjects_to_display(mobjects, include_submobjects=True)):
                pos[id(mob)] = i
        layer.glyphs = [(id(m), owner, pos.get(id(m), -1), *box) for m, owner, box in kept]
        for m in cands:
            p = pos.get(id(m))
            poly = _outline_px(camera, m, t, np) if p is not None else None
            if poly is not None:
                layer.occluders.append((p, (float(poly[:, 0].min()), float(poly[:, 1].min()),
                                            float(poly[:, 0].max()), float(poly[:, 1].max())), poly))
        return layer

    # -- output ----------------------------------------------------------------------------------------------
    def document(self) -> dict:
        pw, ph = self.size or (0, 0)
        return {"format": FORMAT, "nonce": self.nonce, "pixel_width": pw, "pixel_height": ph,
                "frames": self.frames, "encoded_frames": self.encoded,
                "contents": [[list(owner) for owner in c] for c in self.contents],
                "runs": self.runs, "evidence": list(self.evidence),
                "stats": {"record_sec": round(self.sec, 6), "updates": self.updates, "states": self.states,
                          "distinct": len(self.contents)}}


def _kind(m, t) -> str:
    return t.kind_of(type(m)) or "text"


def _excluded(m, t) -> set:
    """ids of the members of a text that are not glyphs: its background rectangle, a Title's underline, a Code
    block's background."""
    out = set()
    d = m.__dict__
    for name in ("underline", "background"):
        sub = d.get(name)
        if sub is not None and isinstance(sub, t.mobject):
            out.update(id(x) for x in sub.get_family())
    bg = t.is_background
    for sub in m.submobjects:
        if bg(type(sub)):
            out.update(id(x) for x in sub.get_family())
    return out


def _opaque_fill(m) -> bool:
    rgbas = m.__dict__.get("fill_rgbas")   # a VMobject's fill colours (what Camera.apply_fill draws)
    try:
        return rgbas is not None and len(rgbas) > 0 and float(rgbas[:, 3].min()) >= 0.999
    except (TypeError, IndexError, ValueError):
        return False


def _px_bbox(camera, m, t, np):
    """Pixel bbox of a member's points (control points: a superset of its outline), or None."""
    pts = m.points if t.plain_transform(camera) else np.asarray(camera.transform_points_pre_display(m, m.points))
    if len(pts) == 0:
        return None
    lo, hi = pts[:, :2].min(axis=0), pts[:, :2].max(axis=0)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return None
    cx, cy, fw, fh, pw, ph, _ = _frame(camera)
    return ((lo[0] - cx) * pw / fw + pw / 2, (cy - hi[1]) * ph / fh + ph / 2,
            (hi[0] - cx) * pw / fw + pw / 2, (cy - lo[1]) * ph / fh + ph / 2)


def _alpha(m) -> tuple[float, float]:
    """(largest drawn alpha, stroke half-width in units of the camera's line width) of one member: the alpha of
    its fill, and of each stroke that is drawn (width > 0, as ``Camera.apply_stroke``)."""
    d = m.__dict__
    try:
        fill = d.get("fill_rgbas")
        a = 0.0 if fill is None or not len(fill) else float(fill[0, 3]) if len(fill) == 1 else float(fill[:, 3].max())
        w = d.get("stroke_width", 0)
        pad = 0.0
        if w and float(w) > 0:
            s = d.get("stroke_rgbas")
            sa = 0.0 if s is None or not len(s) else float(s[0, 3]) if len(s) == 1 else float(s[:, 3].max())
            if sa > 0:
                a, pad = max(a, sa), float(w) / 2
        w = d.get("background_stroke_width", 0)
        if w and float(w) > 0:
            s = d.get("background_stroke_rgbas")
            sa = float(s[:, 3].max()) if s is not None and len(s) else 0.0
            if sa > 0:
                a, pad = max(a, sa), max(pad, float(w) / 2)
        return a, pad
    except (TypeError, ValueError, IndexError, AttributeError):   # colours not in VMobject form: points only
        return 1.0, 0.0


def _frame(camera):
    fc = camera.frame_center
    return (float(fc[0]), float(fc[1]), float(camera.frame_width), float(camera.frame_height),
            int(camera.pixel_width), int(camera.pixel_height), float(getattr(camera, "cairo_line_width_multiple", 0.01)))


def _glyph_boxes(camera, members, t, np) -> list:
    """Per member: (x0, y0, x1, y1, alpha) with x0..x1 / y0..y1 the integer pixel extent (unclipped), or None
    when it draws nothing (alpha 0, no points, a collapsed outline)."""
    cx, cy, fw, fh, pw, ph, lwm = _frame(camera)
    sx, sy = pw / fw, ph / fh
    out: list = [None] * len(members)
    plain = t.plain_transform(camera)
    pts_list, idx, pads, alphas = [], [], [], []
    for i, m in enumerate(members):
        a, pad = _alpha(m)
        if a <= 0:
            continue
        p = m.points if plain else np.asarray(camera.transform_points_pre_display(m, m.points), dtype=float)
        if len(p) == 0:
            continue
        pts_list.append(p)
        idx.append(i)
        pads.append(pad * lwm)
        alphas.append(a)
    if not pts_list:
        return out
    pad = np.asarray(pads)

    def px(lo, hi):
        return _px_rows(lo, hi, pad, cx, cy, sx, sy, pw, ph, np)

    counts = [len(p) for p in pts_list]
    allp = np.concatenate(pts_list)[:, :2]
    if all(c % 4 == 0 for c in counts) and np.isfinite(allp).all():
        # The outline's extent lies between its anchors' extent and its control points'. Where the two give the
        # same pixel extent, so does the outline; only the other glyphs need the exact curve extrema.
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        lo, hi = np.minimum.reduceat(allp, starts, axis=0), np.maximum.reduceat(allp, starts, axis=0)
        c = allp.reshape(-1, 4, 2)
        anchors = np.concatenate([c[:, 0], c[:, 3]], axis=1).reshape(-1, 2, 2)   # per curve: P0, P3
        cstarts = starts // 4
        alo = np.minimum.reduceat(anchors.min(axis=1), cstarts, axis=0)
        ahi = np.maximum.reduceat(anchors.max(axis=1), cstarts, axis=0)
        box, inner = px(lo, hi), px(alo, ahi)
        refine = np.nonzero((box != inner).any(axis=1))[0]
        if len(refine):
            elo, ehi = _bounds([pts_list[j] for j in refine], plain, np)
            box[refine] = _px_rows(elo, ehi, pad[refine], cx, cy, sx, sy, pw, ph, np)
        span = (hi - lo).max(axis=1)
    else:
        lo, hi = _bounds(pts_list, plain, np)
        box = px(lo, hi)
        span = (hi - lo).max(axis=1)
    drawn = (span > 1e-9) & np.isfinite(box).all(axis=1)
    alpha = np.clip(np.round(np.asarray(alphas), 3), 0.001, 1.0)
    for i, ok, b, al in zip(idx, drawn.tolist(), box.tolist(), alpha.tolist()):
        if ok:   # a collapsed outline (a glyph Write has not started) draws nothing
            out[i] = (int(b[0]), int(b[1]), int(b[2]), int(b[3]), al)
    return out


def _px_rows(lo, hi, pad, cx, cy, sx, sy, pw, ph, np):
    x0 = np.floor((lo[:, 0] - pad - cx) * sx + pw / 2)
    x1 = np.ceil((hi[:, 0] + pad - cx) * sx + pw / 2) - 1
    y0 = np.floor((cy - hi[:, 1] - pad) * sy + ph / 2)
    y1 = np.ceil((cy - lo[:, 1] + pad) * sy + ph / 2) - 1
    return np.stack([x0, y0, x1, y1], axis=1)


def _bounds(pts_list, plain: bool, np):
    """Per member (rows of ``pts_list``): exact (min, max) of its cubic Bézier outline in x and y (the curve's
    extrema, not its control points). A member whose point count is not a multiple of 4 uses its points' bounds;
    one with a non-finite point is drawn by manim as the single point (0, 0, 0)."""
    counts = [len(p) for p in pts_list]
    allp = np.concatenate(pts_list)[:, :2]
    if plain and not np.isfinite(allp).all():
        pts_list = [p if np.isfinite(p).all() else np.zeros((1, 3)) for p in pts_list]
        counts = [len(p) for p in pts_list]
        allp = np.concatenate(pts_list)[:, :2]
    if any(c % 4 for c in counts):   # rare: bounds of the points themselves
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        return np.minimum.reduceat(allp, starts, axis=0), np.maximum.reduceat(allp, starts, axis=0)
    c = allp.reshape(-1, 4, 2)
    p0, p1, p2, p3 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    clo = np.minimum(p0, p3)
    chi = np.maximum(p0, p3)
    need = (np.minimum(p1, p2) < clo) | (np.maximum(p1, p2) > chi)
    if need.any():
        rows = np.nonzero(need.any(axis=1))[0]
        q0, q1, q2, q3 = p0[rows], p1[rows], p2[rows], p3[rows]
        d0, d1, d2 = q1 - q0, q2 - q1, q3 - q2
        a = d0 - 2 * d1 + d2
        b = 2 * (d1 - d0)
        with np.errstate(divide="ignore", invalid="ignore"):
            disc = b * b - 4 * a * d0
            sq = np.sqrt(np.where(disc >= 0, disc, np.nan))
            lin = np.abs(a) < 1e-12
            r1 = np.where(lin, -d0 / b, (-b + sq) / (2 * a))
            r2 = np.where(lin, np.nan, (-b - sq) / (2 * a))
        sub_lo, sub_hi = clo[rows], chi[rows]
        for r in (r1, r2):
            ok = np.isfinite(r) & (r > 0) & (r < 1)
            tt = np.where(ok, r, 0.0)
            u = 1 - tt
            v = u * u * u * q0 + 3 * u * u * tt * q1 + 3 * u * tt * tt * q2 + tt * tt * tt * q3
            sub_lo = np.where(ok, np.minimum(sub_lo, v), sub_lo)
            sub_hi = np.where(ok, np.maximum(sub_hi, v), sub_hi)
        clo[rows], chi[rows] = sub_lo, sub_hi
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])) // 4
    return np.minimum.reduceat(clo, starts, axis=0), np.maximum.reduceat(chi, starts, axis=0)


def _outline_px(camera, m, t, np):
    """The outline of a filled occluder as a pixel polygon (its anchors), or None when it is not one closed
    outline (several sub-paths, too few points)."""
    pts = m.points if t.plain_transform(camera) else np.asarray(camera.transform_points_pre_display(m, m.points))
    if not np.isfinite(pts).all():
        return None
    if len(pts) < 8 or len(pts) % 4:
        return None
    c = pts.reshape(-1, 4, 3)
    if not np.allclose(c[1:, 0], c[:-1, 3], atol=1e-6):
        return None  # several sub-paths (a ring, a glyph with holes): its inside is not a simple polygon
    anchors = np.concatenate([c[:, 0, :2], c[-1:, 3, :2]])
    cx, cy, fw, fh, pw, ph, _ = _frame(camera)
    return np.stack([(anchors[:, 0] - cx) * pw / fw + pw / 2, (cy - anchors[:, 1]) * ph / fh + ph / 2], axis=1)


def _inside(poly, xs, ys) -> bool:
    """All points (xs, ys) strictly inside the polygon (even-odd ray casting)."""
    n = len(poly)
    for x, y in zip(xs, ys):
        inside = False
        j = n - 1
        for i in range(n):
            xi, yi = poly[i]
            xj, yj = poly[j]
            if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
                inside = not inside
            j = i
        if not inside:
            return False
    return True


def _grouped(layer: _Layer, size) -> dict:
    """A layer on its own: owner id → [kind, alpha, [boxes]] after its own occlusion, clipped (cached)."""
    if layer.grouped is None:
        layer.grouped = _group([(layer, 0)], size)
    return layer.grouped


def _group(layers, size) -> dict:
    pw, ph = size or (0, 0)
    last: dict = {}
    order: list = []
    occluders: list = []
    for layer, base in layers:
        for mid, owner, p, x0, y0, x1, y1, a in layer.glyphs:
            oid, kind = layer.owners[owner]
            key = (oid, mid)
            if key not in last:
                order.append(key)
            last[key] = (kind, base + max(p, 0), x0, y0, x1, y1, a)
        for p, bbox, poly in layer.occluders:
            occluders.append((base + p, bbox, poly))
    owners: dict = {}
    for key in order:
        kind, p, x0, y0, x1, y1, a = last[key]
        if occluders:   # the glyph's pixels [x0, x1] × [y0, y1] cover the continuous box [x0, x1 + 1) × [y0, y1 + 1)
            hidden = False
            for q, (bx0, by0, bx1, by1), poly in occluders:
                if q > p and bx0 <= x0 and by0 <= y0 and bx1 >= x1 + 1 and by1 >= y1 + 1 and \
                        _inside(poly, (x0, x1 + 1, x1 + 1, x0), (y0, y0, y1 + 1, y1 + 1)):
                    hidden = True
                    break
            if hidden:
                continue
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, pw - 1), min(y1, ph - 1)
        if x1 < x0 or y1 < y0:
            continue  # outside the frame
        entry = owners.get(key[0])
        if entry is None:
            entry = owners[key[0]] = [kind, a, []]
        elif a > entry[1]:
            entry[1] = a
        entry[2].append((x0, y0, x1, y1))
    return owners


def _compose(layers, size) -> tuple:
    """One frame's content: per owner (kind, alpha, ((x0, y0, x1, y1), …)) with the integer pixel extents clipped
    to the frame (sorted: the order of an owner's glyphs is not content), from the layers drawn on top of each
    other (later layers over earlier ones).

    Fast path (every animation frame of a play): the static layer's grouping is computed once, and when the layer
    drawn over it covers nothing (no opaque fill) and shares no member with it, the two groupings are merged."""
    if len(layers) == 2 and not layers[1].occluders:
        static, top = layers
        if static.keys is None:
            static.keys = {(static.owners[o][0], mid) for mid, o, *_ in static.glyphs}
        keys = static.keys
        if not any((top.owners[o][0], mid) in keys for mid, o, *_ in top.glyphs):
            merged = {oid: [e[0], e[1], list(e[2])] for oid, e in _grouped(static, size).items()}
            for oid, (kind, a, boxes) in _grouped(top, size).items():
                entry = merged.get(oid)
                if entry is None:
                    merged[oid] = [kind, a, list(boxes)]
                else:
                    entry[1] = max(entry[1], a)
                    entry[2].extend(boxes)
            return tuple((kind, a, tuple(sorted(boxes))) for kind, a, boxes in merged.values())
    owners = _group([(layer, i << 40) for i, layer in enumerate(layers)], size)
    return tuple((kind, a, tuple(sorted(boxes))) for kind, a, boxes in owners.values())


class _Types:
    def __init__(self):
        from manim.camera.camera import Camera
        from manim.mobject.geometry.shape_matchers import BackgroundRectangle
        from manim.mobject.mobject import Mobject
        from manim.mobject.svg.brace import Brace
        from manim.mobject.svg.svg_mobject import SVGMobject, VMobjectFromSVGPath
        from manim.mobject.text.code_mobject import Code
        from manim.mobject.text.numbers import DecimalNumber
        from manim.mobject.text.tex_mobject import SingleStringMathTex
        from manim.mobject.text.text_mobject import MarkupText, Paragraph, Text

        self.kinds = ((Code, "code"), (Paragraph, "paragraph"), (MarkupText, "markup"), (Text, "text"),
                      (SingleStringMathTex, "tex"), (DecimalNumber, "number"))
        self.text_types = tuple(cls for cls, _ in self.kinds)
        self.svg = SVGMobject
        self.svg_path = VMobjectFromSVGPath
        self.brace = Brace
        self.mobject = Mobject
        self.background_rect = BackgroundRectangle
        self._plain = Camera.transform_points_pre_display
        self._kind: dict = {}
        self._svg: dict = {}
        self._bg: dict = {}

    def kind_of(self, cls) -> str | None:
        """The text kind of a mobject class (None: not text-like); per class, computed once (``isinstance`` on
        manim's classes goes through ``ABCMeta.__instancecheck__``)."""
        try:
            return self._kind[cls]
        except KeyError:
            kind = next((name for base, name in self.kinds if issubclass(cls, base)), None)
            self._kind[cls] = kind
            return kind

    def svg_types(self, cls) -> tuple[bool, bool]:
        """(an SVGMobject, an SVG path that can be a glyph) for a class, computed once; a ``Brace`` is an SVG path
        too, never a glyph."""
        try:
            return self._svg[cls]
        except KeyError:
            out = self._svg[cls] = (issubclass(cls, self.svg),
                                    issubclass(cls, self.svg_path) and not issubclass(cls, self.brace))
            return out

    def is_background(self, cls) -> bool:
        try:
            return self._bg[cls]
        except KeyError:
            out = self._bg[cls] = issubclass(cls, self.background_rect)
            return out

    def plain_transform(self, camera) -> bool:
        return type(camera).transform_points_pre_display is self._plain


def install_from_env() -> None:
    """In the forked render child: when the parent asked for text boxes (env var, removed here so the script
    never sees it), wrap the frame path and register the writer at exit. Never breaks the render."""
    raw = os.environ.pop(ENV, None)
    if not raw:
        return
    global _TB_RECORDER
    try:
        req = json.loads(raw)
        rec = _TB_RECORDER = _Recorder(req)
    except (ValueError, KeyError, TypeError):
        return
    import atexit

    atexit.register(_write_at_exit, rec)
    try:
        _install(rec)
    except Exception as exc:  # noqa: BLE001 - the render must not change: the record is just unusable
        rec.flag(f"unsupported:install_failed:{type(exc).__name__}")


def _install(rec: _Recorder) -> None:
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene import scene_file_writer
    from manim.scene.scene_file_writer import SceneFileWriter
    from manim.utils.iterables import list_update

    rec.t = _Types()
    orig_update = CairoRenderer.update_frame
    orig_static = CairoRenderer.save_static_frame_data
    orig_write = SceneFileWriter.write_frame
    orig_encode = SceneFileWriter.encode_and_write_frame
    write_to_movie = scene_file_writer.write_to_movie
    clock = time.thread_time   # CPU time of the main thread (the movie is encoded in another one)

    def update_frame(self, scene, mobjects=None, include_submobjects=True, ignore_skipping=True, **kwargs):
        result = orig_update(self, scene, mobjects, include_submobjects, ignore_skipping, **kwargs)
        t0 = clock()
        try:
            if not (self.skip_animations and not ignore_skipping):
                rec.seen(self)
                if not mobjects:
                    drawn = list_update(scene.mobjects, scene.foreground_mobjects)
                elif isinstance(mobjects, (list, tuple)):
                    drawn = list(mobjects)
                else:
                    drawn = None
                    rec.flag("unsupported:capture_of_iterator")
                if drawn is not None:
                    rec.on_capture(self, scene, drawn, bool(include_submobjects))
        except Exception as exc:  # noqa: BLE001
            rec.flag(f"unsupported:capture_error:{type(exc).__name__}")
        rec.sec += clock() - t0
        return result

    def save_static_frame_data(self, scene, static_mobjects):
        rec.in_static = True
        rec.static = None
        rec.owner_map = None   # a new play: the scene's structure may have changed
        try:
            return orig_static(self, scene, static_mobjects)
        finally:
            rec.in_static = False
            t0 = clock()
            try:
                if getattr(self, "static_image", None) is None:
                    rec.static = None
                elif rec.static is not None and not self.skip_animations:
                    rec.static[4] = rec._layer(*rec.static[:4])   # now: the static layer's state of this play
            except Exception as exc:  # noqa: BLE001
                rec.flag(f"unsupported:capture_error:{type(exc).__name__}")
            rec.sec += clock() - t0

    def write_frame(self, frame_or_renderer, num_frames=1):
        result = orig_write(self, frame_or_renderer, num_frames)
        t0 = clock()
        try:
            rec.seen(self)
            if write_to_movie():
                rec.on_write(num_frames)
        except Exception as exc:  # noqa: BLE001
            rec.flag(f"unsupported:write_error:{type(exc).__name__}")
        rec.sec += clock() - t0
        return result

    def encode_and_write_frame(self, frame, num_frames):
        result = orig_encode(self, frame, num_frames)
        rec.encoded += max(int(num_frames), 0)
        return result

    for fn, orig in ((update_frame, orig_update), (save_static_frame_data, orig_static), (write_frame, orig_write),
                     (encode_and_write_frame, orig_encode)):
        fn.__name__, fn.__qualname__, fn.__doc__ = orig.__name__, orig.__qualname__, orig.__doc__
    CairoRenderer.update_frame = update_frame
    CairoRenderer.save_static_frame_data = save_static_frame_data
    SceneFileWriter.write_frame = write_frame
    SceneFileWriter.encode_and_write_frame = encode_and_write_frame
    hooks = {(CairoRenderer, "update_frame"): update_frame,
             (CairoRenderer, "save_static_frame_data"): save_static_frame_data,
             (SceneFileWriter, "write_frame"): write_frame,
             (SceneFileWriter, "encode_and_write_frame"): encode_and_write_frame}
    own = {name: (obj, getattr(obj, "__code__", None)) for name, obj in globals().items()
           if callable(obj) and getattr(obj, "__module__", None) == __name__}
    own.update({f"_Recorder.{k}": (v, v.__code__) for k, v in vars(_Recorder).items() if callable(v)})
    rec.guard = (hooks, own, write_to_movie, scene_file_writer)


def _verify(rec: _Recorder) -> list[str]:
    """Run-time tamper evidence: a hook replaced (on the class or on an instance), this module's functions
    replaced, manim's movie switch replaced."""
    found = []
    guard = getattr(rec, "guard", None)
    if guard is None:
        return found
    hooks, own, write_to_movie, module = guard
    for (cls, name), fn in hooks.items():
        if cls.__dict__.get(name) is not fn:
            found.append(f"tamper:hook_replaced:{cls.__name__}.{name}")
    g = globals()
    for name, (obj, code) in own.items():
        if name.startswith("_Recorder."):
            cur = vars(_Recorder).get(name.split(".", 1)[1])
        else:
            cur = g.get(name)
        if cur is not obj or getattr(cur, "__code__", None) is not code:
            found.append(f"tamper:recorder_replaced:{name}")
    if module.write_to_movie is not write_to_movie:
        found.append("tamper:write_to_movie_replaced")
    try:
        for obj in rec.instances.values():
            shadowed = {"update_frame", "save_static_frame_data", "write_frame", "encode_and_write_frame"} & \
                set(getattr(obj, "__dict__", {}))
            for name in sorted(shadowed):
                found.append(f"tamper:instance_override:{type(obj).__name__}.{name}")
    except Exception as exc:  # noqa: BLE001
        found.append(f"tamper:guard_error:{type(exc).__name__}")
    return found


def _write_at_exit(rec: _Recorder) -> None:
    try:
        for reason in _verify(rec):
            rec.flag(reason)
        if rec.encoded != rec.frames and not any(e.startswith("unsupported") for e in rec.evidence):
            rec.flag(f"unsupported:encoded_{rec.encoded}_of_{rec.frames}")
        data = json.dumps(rec.document(), separators=(",", ":")).encode("utf-8")
        final = Path(rec.file)
        tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, final)
    except Exception:  # noqa: BLE001 - the render's exit must not change
        pass


# ==========================================================================================================
# Parent side
# ==========================================================================================================


def static_evidence(source: str) -> list[str]:
    """Evidence, from the script's text alone, that it reaches for the recorder or the frame path it hooks."""
    import ast

    from prism_fast.execute.evidence import reference_evidence

    found: set[str] = set()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        found |= reference_evidence(tree, names=TAMPER_NAMES, attributes=TAMPER_NAMES,
                                    strings=(*TAMPER_STRINGS, *TAMPER_NAMES))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in TAMPER_NAMES:
                found.add(f"defines:{node.name}")
    else:  # unparsable: the render fails anyway; look at the raw text
        for needle in (*TAMPER_STRINGS, *TAMPER_NAMES):
            if needle in source:
                found.add(f"text:{needle}")
    return sorted(found)


@dataclass
class Plan:
    """What the parent asked of one render: the record's path in the scratch dir and its nonce, or the static
    evidence that made it skip the recorder."""

    file: str | None
    nonce: str | None
    evidence: list[str] = field(default_factory=list)

    @property
    def env(self) -> dict:
        if self.file is None:
            return {}
        return {ENV: json.dumps({"file": self.file, "nonce": self.nonce})}


def plan(work: Path, script_text: str) -> Plan:
    evidence = static_evidence(script_text)
    if evidence:
        return Plan(None, None, [f"static:{e}" for e in evidence])
    return Plan(str(Path(work) / f".tb_{secrets.token_hex(8)}.json"), secrets.token_hex(16))


def sidecar_path(video: str | os.PathLike) -> Path:
    v = Path(video)
    return v.with_name(v.stem + SIDECAR_SUFFIX)


def discard(video: str | os.PathLike) -> None:
    """Remove a sidecar left by an earlier render of the same video path (it would describe other frames)."""
    try:
        os.unlink(sidecar_path(video))
    except FileNotFoundError:
        pass


class RecordError(ValueError):
    pass


def validate(doc, nonce: str | None) -> dict:
    """The child's record, checked field by field; returns the normalised record (raises ``RecordError``)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordError("format")
    if nonce is not None and doc.get("nonce") != nonce:
        raise RecordError("nonce")
    pw, ph = doc.get("pixel_width"), doc.get("pixel_height")
    if not (isinstance(pw, int) and isinstance(ph, int) and 0 <= pw <= 100_000 and 0 <= ph <= 100_000):
        raise RecordError("pixel size")
    contents, runs = doc.get("contents"), doc.get("runs")
    if not isinstance(contents, list) or not isinstance(runs, list):
        raise RecordError("contents/runs")
    clean_contents = []
    for c in contents:
        if not isinstance(c, list):
            raise RecordError("content")
        owners = []
        for owner in c:
            if not (isinstance(owner, list) and len(owner) == 3 and owner[0] in KINDS
                    and isinstance(owner[1], (int, float)) and not isinstance(owner[1], bool)
                    and 0 < owner[1] <= 1 and isinstance(owner[2], list) and owner[2]):
                raise RecordError("owner")
            boxes = []
            for b in owner[2]:
                if not (isinstance(b, list) and len(b) == 4 and all(type(v) is int for v in b)):
                    raise RecordError("box")
                x0, y0, x1, y1 = b
                if not (0 <= x0 <= x1 < pw and 0 <= y0 <= y1 < ph):
                    raise RecordError("box bounds")
                boxes.append([x0, y0, x1, y1])
            owners.append([owner[0], float(owner[1]), boxes])
        clean_contents.append(owners)
    total = 0
    clean_runs = []
    for r in runs:
        if not (isinstance(r, list) and len(r) == 2 and type(r[0]) is int and type(r[1]) is int and r[1] > 0
                and -1 <= r[0] < len(clean_contents)):
            raise RecordError("run")
        total += r[1]
        clean_runs.append([r[0], r[1]])
    if total != doc.get("frames") or total > MAX_FRAMES:
        raise RecordError("frame count")
    evidence = doc.get("evidence")
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise RecordError("evidence")
    stats = doc.get("stats") if isinstance(doc.get("stats"), dict) else {}
    return {"pixel_width": pw, "pixel_height": ph, "frames": total, "contents": clean_contents, "runs": clean_runs,
            "evidence": [e[:200] for e in evidence[:50]],
            "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}}


def collect(p: Plan | None, video: Path, work: Path, max_bytes: int = MAX_BYTES) -> dict:
    """After the sample's processes are gone: copy the record out of the scratch dir (regular file, size-bounded,
    no symlink followed), validate it and write the sidecar next to ``video`` (bound to its sha256). Returns the
    sidecar's document (``status`` ok | tampered | missing | unsupported | off)."""
    from prism_fast import fsutil
    from prism_fast.execute import sandbox

    video = Path(video)
    discard(video)
    if p is None:
        return {"status": "off"}
    doc: dict = {"format": FORMAT, "status": "ok", "video_sha256": fsutil.sha256_file(video)}
    if p.file is None:
        doc.update(status="tampered", detail="; ".join(p.evidence)[:2000])
    else:
        copied = video.with_name(f".{video.stem}.tb.{os.getpid()}.json")
        try:
            try:
                sandbox.copy_regular_file(Path(p.file), copied, max_bytes)
            except FileNotFoundError:
                doc.update(status="missing", detail="the render left no text-box record")
                copied = None
            except OSError as exc:
                doc.update(status="tampered", detail=f"record not copied: {exc}")
                copied = None
            if copied is not None:
                try:
                    rec = validate(json.loads(copied.read_bytes().decode("utf-8")), p.nonce)
                except (RecordError, ValueError, UnicodeDecodeError, RecursionError) as exc:
                    doc.update(status="tampered", detail=f"record fails validation: {exc}"[:2000])
                else:
                    tampered = [e for e in rec["evidence"] if e.startswith("tamper:")]
                    if tampered:
                        doc.update(status="tampered", detail="; ".join(tampered)[:2000])
                    elif rec["evidence"]:
                        doc.update(status="unsupported", detail="; ".join(rec["evidence"])[:2000])
                    doc.update({k: rec[k] for k in ("pixel_width", "pixel_height", "frames", "stats")})
                    if doc["status"] == "ok":
                        doc.update(contents=rec["contents"], runs=rec["runs"])
        finally:
            if copied is not None:
                try:
                    os.unlink(copied)
                except OSError:
                    pass
    fsutil.atomic_write_text(sidecar_path(video), json.dumps(doc, separators=(",", ":")))
    return doc


# -- render cache: the sidecar travels with the cached video -------------------------------------------------

def _cache_paths(cache_root: str | os.PathLike, key: str) -> tuple[Path, Path]:
    folder = Path(cache_root) / key[:2]
    return folder / f"{key}{SIDECAR_SUFFIX}", folder / f"{key}{SIDECAR_SUFFIX}.tag"


def cache_store(cache_root: str | os.PathLike, key: str, video: str | os.PathLike) -> bool:
    """Put the sidecar of ``video`` beside the render cache entry ``key`` (HMAC-tagged with the cache's key)."""
    from prism_fast import fsutil, integrity

    src = sidecar_path(video)
    if not src.is_file():
        return False
    data = src.read_bytes()
    path, tag_path = _cache_paths(cache_root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    ikey = integrity.load_or_create_key(integrity.default_key_dir(Path(cache_root)))
    msg = integrity.message("textboxes_cache", key=key, sha256=fsutil.sha256_hex(data))
    fsutil.atomic_write_text(tag_path, integrity.tag(ikey, msg))
    fsutil.atomic_write_bytes(path, data)
    return True


def cache_restore(cache_root: str | os.PathLike, key: str, video: str | os.PathLike) -> bool:
    """Copy the cached sidecar of entry ``key`` next to ``video`` when its tag verifies and it names that
    video's bytes; else nothing (the caller renders again)."""
    from prism_fast import fsutil, integrity

    discard(video)
    path, tag_path = _cache_paths(cache_root, key)
    try:
        data = path.read_bytes()
        tag = tag_path.read_text(encoding="ascii").strip()
    except OSError:
        return False
    ikey = integrity.load_or_create_key(integrity.default_key_dir(Path(cache_root)))
    msg = integrity.message("textboxes_cache", key=key, sha256=fsutil.sha256_hex(data))
    if not integrity.verify(ikey, msg, tag):
        return False
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(doc, dict) or doc.get("video_sha256") != fsutil.sha256_file(video):
        return False
    fsutil.atomic_write_bytes(sidecar_path(video), data)
    return True


# ==========================================================================================================
# Consumer side (PADVC): the sidecar → text boxes per frame
# ==========================================================================================================


class SceneBoxes:
    """A validated sidecar: glyph boxes per frame index."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.pixel_width = int(doc["pixel_width"])
        self.pixel_height = int(doc["pixel_height"])
        self.frames = int(doc["frames"])
        self.contents = doc["contents"]
        starts, ids = [], []
        pos = 0
        for cid, count in doc["runs"]:
            starts.append(pos)
            ids.append(cid)
            pos += count
        self._starts, self._ids = starts, ids
        self._lines: dict = {}

    def content_id(self, index: int) -> int:
        import bisect

        if not 0 <= index < self.frames:
            raise IndexError(f"frame {index} outside the record's {self.frames} frames")
        return self._ids[bisect.bisect_right(self._starts, index) - 1]

    def owners(self, index: int) -> list:
        cid = self.content_id(index)
        return [] if cid < 0 else self.contents[cid]

    def line_boxes(self, index: int, min_opacity: float = 0.0, pad: int = 0) -> list[tuple[int, int, int, int]]:
        """The text line boxes of frame ``index`` (see :func:`line_boxes`), cached per distinct content."""
        cid = self.content_id(index)
        key = (cid, float(min_opacity), int(pad))
        if key not in self._lines:
            owners = [] if cid < 0 else self.contents[cid]
            out = []
            for _kind, alpha, boxes in owners:
                if alpha > min_opacity:
                    out.extend(line_boxes(boxes))
            if pad:
                out = [(max(x0 - pad, 0), max(y0 - pad, 0), min(x1 + pad, self.pixel_width - 1),
                        min(y1 + pad, self.pixel_height - 1)) for x0, y0, x1, y1 in out]
            self._lines[key] = out
        return self._lines[key]

    def polygons(self, index: int, min_opacity: float = 0.0, pad: int = 0) -> list[list[list[int]]]:
        """The line boxes as 4-point polygons (the OCR polygon format; filled with edges included)."""
        return [[[x0, y0], [x1, y0], [x1, y1], [x0, y1]] for x0, y0, x1, y1 in self.line_boxes(index, min_opacity,
                                                                                               pad)]


def line_boxes(glyphs, gap_factor: float = 1.5) -> list[tuple[int, int, int, int]]:
    """Glyph boxes of one text mobject → boxes of its text lines, the unit OCR detects.

    Glyphs whose vertical extents overlap chain into one line (sub/superscripts, a formula's big operators);
    a glyph that overlaps no line but is thinner than a third of the text's median glyph height (a fraction bar,
    a rule) joins the nearest line; a line is split where the horizontal gap between glyphs exceeds
    ``gap_factor`` × the line's height."""
    if not glyphs:
        return []
    boxes = sorted((tuple(b) for b in glyphs), key=lambda b: (b[1], b[0]))
    heights = sorted(b[3] - b[1] + 1 for b in boxes)
    median_h = heights[len(heights) // 2]
    thin = [b for b in boxes if (b[3] - b[1] + 1) * 3 < median_h]
    regular = [b for b in boxes if (b[3] - b[1] + 1) * 3 >= median_h] or thin
    if regular is thin:
        thin = []
    lines: list[list] = []   # [y0, y1, [glyphs]]
    for b in regular:        # sorted by top: a glyph overlapping the last line's extent joins it
        if lines and b[1] <= lines[-1][1]:
            lines[-1][1] = max(lines[-1][1], b[3])
            lines[-1][2].append(b)
        else:
            lines.append([b[1], b[3], [b]])
    for b in thin:
        cy = (b[1] + b[3]) / 2
        best = min(lines, key=lambda ln: 0 if ln[0] <= cy <= ln[1] else min(abs(cy - ln[0]), abs(cy - ln[1])))
        best[0], best[1] = min(best[0], b[1]), max(best[1], b[3])
        best[2].append(b)
    out = []
    for _y0, _y1, members in lines:
        members.sort()
        cur = list(members[0])
        for b in members[1:]:
            height = max(cur[3], b[3]) - min(cur[1], b[1]) + 1
            if b[0] - cur[2] - 1 > gap_factor * height:
                out.append(tuple(cur))
                cur = list(b)
            else:
                cur = [min(cur[0], b[0]), min(cur[1], b[1]), max(cur[2], b[2]), max(cur[3], b[3])]
        out.append(tuple(cur))
    return out


def load_sidecar(video: str | os.PathLike) -> tuple[SceneBoxes | None, str]:
    """PADVC side: the sidecar of ``video`` → (boxes, "") when usable, else (None, why)."""
    from prism_fast import fsutil

    path = sidecar_path(video)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None, "scene_masks_missing: no text-box record next to the video"
    except OSError as exc:
        return None, f"scene_masks_missing: {exc}"
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None, "scene_masks_tampered: unreadable text-box record"
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return None, "scene_masks_tampered: not a text-box record"
    status = doc.get("status")
    if status != "ok":
        return None, f"scene_masks_{status}: {doc.get('detail', '')}"[:2000]
    if doc.get("video_sha256") != fsutil.sha256_file(video):
        return None, "scene_masks_stale: the record belongs to another render of this video path"
    try:
        rec = validate({**doc, "nonce": None, "evidence": [], "format": FORMAT}, None)
    except RecordError as exc:
        return None, f"scene_masks_tampered: record fails validation: {exc}"
    return SceneBoxes(rec), ""


__all__ = ["ENV", "FORMAT", "install_from_env", "static_evidence", "plan", "Plan", "collect", "validate",
           "sidecar_path", "discard", "cache_store", "cache_restore", "SceneBoxes", "line_boxes", "load_sidecar"]
