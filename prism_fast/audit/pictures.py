"""Pictures of the audit's findings (``prism-fast inspect``, ``audit.pictures``).

Two halves:

* **child side** (inside the audit child, Manim imported, no torch): at each checkpoint snapshot,
  ``capture_checkpoint`` rasterises the scene's top-level mobjects once with a separate Cairo camera at the
  ``-ql`` resolution (854×480) over the audit's frame rectangle, PNG-encodes it, and keeps the scene-space
  bbox of every atom named by a finding. ``write_segment_pictures`` writes one PNG + JSON per segment into
  ``$PRISM_AUDIT_PICTURES_DIR`` (default ``./audit_pictures``). Nothing here touches the audited geometry
  or the report: the capture runs after the snapshot's checks, reads points only, and its own camera is not
  the scene's renderer (tested: reports with and without pictures are byte-identical).
* **parent side** (torch/torchvision): ``draw_findings`` reads those files plus the report and draws every
  violating atom's bbox and label with ``torchvision.utils.draw_bounding_boxes``; writes ``segment_<k>.png``
  (k = running index over the report's scenes and segments, in report order) and ``findings.json``.

Scene → pixel mapping (the one manim's Cairo camera uses)::

    px = (x - cx) * W / fw + W / 2        py = -(y - cy) * H / fh + H / 2
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

QL_PIXELS = (854, 480)  # manim -ql (low_quality): pixel_width, pixel_height
PICTURES_ENV = "PRISM_AUDIT_PICTURES_DIR"
# box colours by finding kind (an atom in several findings takes the first kind in this order)
KIND_ORDER = ("out_of_bounds", "overlaps", "leaks", "containers")
KIND_COLORS = {"out_of_bounds": (255, 0, 0), "overlaps": (255, 160, 0), "leaks": (255, 0, 255),
               "containers": (0, 200, 255)}


# ---------------------------------------------------------------------------------------------------------
# child side
# ---------------------------------------------------------------------------------------------------------
def capture_checkpoint(scene, atoms, half_size: tuple[float, float], center=None, err=None) -> dict:
    """The picture record of one snapshot: PNG bytes of the frame (or the error) and every atom's bbox (the
    findings are decided outside this process). ``err``: the hooks' stderr stream (the one-pass render redirects
    it), default ``sys.stderr``."""
    lx, ly = float(half_size[0]), float(half_size[1])
    cx, cy = (0.0, 0.0) if center is None else (float(center[0]), float(center[1]))
    bboxes = {}
    for a in atoms:
        if len(a.xy):
            lo, hi = np.min(a.xy, axis=0), np.max(a.xy, axis=0)
            bboxes[a.id] = [float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])]
    record = {"frame": {"center": [cx, cy], "width": 2 * lx, "height": 2 * ly},
              "pixels": list(QL_PIXELS), "bboxes": bboxes, "png": None, "error": None}
    try:
        from manim.camera.camera import Camera

        src = scene.camera
        cam = Camera(pixel_width=QL_PIXELS[0], pixel_height=QL_PIXELS[1], frame_width=2 * lx, frame_height=2 * ly,
                     frame_center=np.array([cx, cy, 0.0]), background_color=src.background_color,
                     background_opacity=src.background_opacity)
        cam.capture_mobjects(list(scene.mobjects))
        buf = io.BytesIO()
        cam.get_image().convert("RGB").save(buf, format="PNG")
        record["png"] = buf.getvalue()
    except Exception as exc:  # a raster-time error must not change the audit: recorded, drawn on black
        record["error"] = f"{type(exc).__name__}: {exc}"
        (err or sys.stderr).write(f"[audit pictures] frame capture failed: {record['error']}\n")
    return record


def write_segment_pictures(scene_name: str, snapshots, err=None) -> None:
    """``<dir>/<Scene>.<label>.png`` + ``.json`` for every kept snapshot that carries a picture record (``err`` as
    for :func:`capture_checkpoint`); the parent names the segments' ones (:func:`name_segment_files`)."""
    out = Path(os.environ.get(PICTURES_ENV) or Path.cwd() / "audit_pictures")
    try:
        out.mkdir(parents=True, exist_ok=True)
        for snap in snapshots:
            pic = getattr(snap, "picture", None)
            if pic is None:
                continue
            stem = f"{scene_name}.{snap.label}"
            meta = {k: v for k, v in pic.items() if k != "png"}
            meta.update(scene=scene_name, label=snap.label, has_png=pic["png"] is not None)
            if pic["png"] is not None:
                (out / f"{stem}.png").write_bytes(pic["png"])
            (out / f"{stem}.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    except Exception as exc:
        (err or sys.stderr).write(f"[audit pictures] writing pictures failed: {type(exc).__name__}: {exc}\n")


def write_snapshot_frames(scene_name: str, snapshots, err=None) -> None:
    """``audit_frame.<Scene>.<label>.png`` in the working directory for every kept snapshot with a frame (the
    toolkit's ``audit_{error,sample}_<i>.png`` need the verdict: the parent names them, :func:`name_segment_files`)."""
    for snap in snapshots:
        filename = f"audit_frame.{scene_name}.{snap.label}.png"
        if snap.frame is None:
            (err or sys.stderr).write(f"截图缺失 ({filename})\n")
            continue
        try:
            from PIL import Image

            Image.fromarray(snap.frame).save(filename)
        except Exception as exc:
            (err or sys.stderr).write(f"截图失败 ({filename}): {exc}\n")


# ---------------------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------------------
def name_segment_files(per_scene, pictures_dir: Path | None, frames_dir: Path | None) -> None:
    """Parent side, after the verdict: the child's per-snapshot files named as segments. ``per_scene``:
    ``verdict.segments_of``'s list (scene names and labels validated by ``observations.decode``). Pictures:
    ``<Scene>.<label>.*`` -> ``<Scene>.Segment_<i>.*``; frames: ``audit_frame.<Scene>.<label>.png`` -> the toolkit's
    ``audit_{error,sample}_<i>.png`` (a later scene's overwrite an earlier one's, as the toolkit's do); every other
    per-snapshot file is removed."""
    for name, snaps, _ in per_scene:
        for i, snap in enumerate(snaps):
            if pictures_dir is not None:
                _name_picture(Path(pictures_dir), name, snap.label, i)
            if frames_dir is not None:
                kind = "error" if snap.has_issue() else "sample"
                _rename_regular(Path(frames_dir) / f"audit_frame.{name}.{snap.label}.png",
                                Path(frames_dir) / f"audit_{kind}_{i}.png")
    for folder, pattern in ((pictures_dir, "*.Step_*"), (frames_dir, "audit_frame.*")):
        for left in Path(folder).glob(pattern) if folder is not None else ():
            if left.is_file() or left.is_symlink():
                left.unlink(missing_ok=True)


def _name_picture(folder: Path, scene: str, label: str, i: int) -> None:
    """``<Scene>.<label>.{png,json}`` -> ``<Scene>.Segment_<i>.*``, the JSON (the child's) marked with its segment."""
    meta_path = folder / f"{scene}.{label}.json"
    if meta_path.is_file() and not meta_path.is_symlink():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            meta["segment"] = f"Segment_{i}"
            meta_path.write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
        except (OSError, ValueError, RecursionError, TypeError):
            meta_path.unlink(missing_ok=True)  # (not a record the child writes: drawn without it)
    for ext in (".png", ".json"):
        _rename_regular(folder / f"{scene}.{label}{ext}", folder / f"{scene}.Segment_{i}{ext}")


def _rename_regular(src: Path, dest: Path) -> None:
    if src.is_file() and not src.is_symlink():
        os.replace(src, dest)


def scene_to_pixels(bbox, frame: dict, pixels) -> list[float]:
    """Scene bbox ``[minx, miny, maxx, maxy]`` → pixel box ``[x0, y0, x1, y1]`` (y down), unclipped."""
    (cx, cy), fw, fh = frame["center"], frame["width"], frame["height"]
    w, h = pixels
    x0 = (bbox[0] - cx) * w / fw + w / 2
    x1 = (bbox[2] - cx) * w / fw + w / 2
    y0 = -(bbox[3] - cy) * h / fh + h / 2
    y1 = -(bbox[1] - cy) * h / fh + h / 2
    return [x0, y0, x1, y1]


def _clip_box(box, pixels) -> list[int]:
    """Integer pixel box inside the image, at least one pixel wide and high (an off-frame atom is drawn on
    the nearest image edge)."""
    w, h = pixels
    x0 = int(np.clip(np.floor(box[0]), 0, w - 1))
    x1 = int(np.clip(np.ceil(box[2]), 0, w - 1))
    y0 = int(np.clip(np.floor(box[1]), 0, h - 1))
    y1 = int(np.clip(np.ceil(box[3]), 0, h - 1))
    if x1 <= x0:
        x0, x1 = (x0 - 1, x0) if x0 > 0 else (x0, x0 + 1)
    if y1 <= y0:
        y0, y1 = (y0 - 1, y0) if y0 > 0 else (y0, y0 + 1)
    return [x0, y0, x1, y1]


def _atom_findings(segment: dict) -> dict[str, list]:
    """id → [(kind, text)] for one report segment (containers of leaks get kind "containers")."""
    out: dict[str, list] = {}
    for x in segment.get("out_of_bounds", []):
        out.setdefault(x["mobject"], []).append(("out_of_bounds", f"OOB {x['dist']}"))
    for x in segment.get("overlaps", []):
        a, b = x["mobjects"]
        out.setdefault(a, []).append(("overlaps", f"overlap {x['ratio']} w/ {b}"))
        out.setdefault(b, []).append(("overlaps", f"overlap {x['ratio']} w/ {a}"))
    for x in segment.get("leaks", []):
        out.setdefault(x["mobject"], []).append(("leaks", f"leak {x['ratio']} from {x['container']}"))
        out.setdefault(x["container"], []).append(("containers", f"container of {x['mobject']}"))
    return out


def draw_findings(report: dict, pictures_dir: Path, out_dir: Path, extra: dict | None = None) -> dict:
    """Draw every segment of ``report`` (``{Scene: {Segment_i: ...}}``) from the child's picture files.

    Writes ``out_dir/segment_<k>.png`` and ``out_dir/findings.json``; returns the findings document. A
    segment without a captured frame (capture error, or no picture files) is drawn on a black image and
    says so in ``frame_error``."""
    import torch
    from PIL import Image

    try:  # only the pictures need it (``inspect``, ``audit.pictures``)
        from torchvision.utils import draw_bounding_boxes
    except ImportError as exc:
        raise RuntimeError(f"audit pictures need torchvision ({exc}): pip install torchvision==0.29.1 (the build "
                           "that matches torch 2.14.1), or leave audit.pictures off") from None

    pictures_dir, out_dir = Path(pictures_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("segment_*.png"):
        old.unlink()
    segments_out = []
    k = 0
    for scene_name, segments in report.items():
        for seg_name in sorted(segments, key=lambda s: int(re.sub(r"\D", "", s) or 0)):
            seg = segments[seg_name]
            png_path = pictures_dir / f"{scene_name}.{seg_name}.png"
            meta_path = pictures_dir / f"{scene_name}.{seg_name}.json"
            meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else None
            pixels = tuple(meta["pixels"]) if meta else QL_PIXELS
            frame_error = None
            if meta and meta.get("has_png") and png_path.exists():
                image = np.array(Image.open(png_path).convert("RGB"))
            else:
                frame_error = (meta or {}).get("error") or "no picture was captured for this segment"
                image = np.zeros((pixels[1], pixels[0], 3), dtype=np.uint8)
            atoms = []
            boxes, labels, colors = [], [], []
            for atom_id, notes in _atom_findings(seg).items():
                kinds = [kind for kind, _ in notes]
                kind = min(kinds, key=KIND_ORDER.index)
                entry = {"id": atom_id, "kinds": sorted(set(kinds), key=KIND_ORDER.index),
                         "notes": [text for _, text in notes], "color": list(KIND_COLORS[kind])}
                bbox = (meta or {}).get("bboxes", {}).get(atom_id)
                if bbox is None:  # e.g. the leak container "unknown" of the toolkit's format
                    entry.update(bbox_scene=None, bbox_px=None, drawn=False)
                else:
                    box_px = scene_to_pixels(bbox, meta["frame"], pixels)
                    drawn = _clip_box(box_px, pixels)
                    entry.update(bbox_scene=bbox, bbox_px=[round(v, 2) for v in box_px], box_drawn=drawn, drawn=True)
                    boxes.append(drawn)
                    labels.append(f"{atom_id}: {'; '.join(entry['notes'])}")
                    colors.append(tuple(KIND_COLORS[kind]))
                atoms.append(entry)
            tensor = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
            if boxes:
                tensor = draw_bounding_boxes(tensor, torch.tensor(boxes, dtype=torch.float64), labels=labels,
                                             colors=colors, width=2)
            png_name = f"segment_{k}.png"
            Image.fromarray(tensor.permute(1, 2, 0).numpy()).save(out_dir / png_name)
            segments_out.append({"k": k, "scene": scene_name, "segment": seg_name,
                                 "label": (meta or {}).get("label"), "png": png_name, "image_size": list(pixels),
                                 "frame": (meta or {}).get("frame"), "frame_error": frame_error,
                                 "findings": seg, "atoms": atoms})
            k += 1
    doc = {**(extra or {}), "segments": segments_out}
    (out_dir / "findings.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    return doc
