"""Raw checkpoint geometry as data: what the audit's child process hands to trusted code (docs/security.md
"Verdict outside the script's process").

The child (separate audit or one-pass render) records, per audited scene, the snapshots it took (atoms: ids,
class flags, style, points, rings) and which of them the segment log selected; it computes nothing from them.
:func:`decode` is the parent's strict reader: any field of the wrong type, shape or range raises
:class:`ObservationError`. Pure: no Manim import.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field

import numpy as np

from prism_fast.audit.cascade import Atom
from prism_fast.audit.polygon import Rings

VERSION = 2  # 2: the video witness's data (plays, and per snapshot its play, camera, background, drawn table)
# what the child prints on stderr where the toolkit prints a scene's report JSON (its last line is the same "}")
STAND_IN = "<report: computed outside the script's process>"

_FLAGS = ("is_vmobject", "is_item", "is_container", "is_text_like", "is_line_class", "is_rectangle", "is_square",
          "is_circle", "is_dashed_line")
_STYLE = ("fill", "sw", "sop")
_MAX_DIMS = 2
_LABEL = re.compile(r"Step_[0-9]{1,9}")  # segments.SegmentLog.next_label
_MAX_ITEMS = 50_000_000
DRAWN_WIDTH = 15  # atoms.DRAWN_COLUMNS and the owner atom's index in the snapshot's table (-1: none)
_MAX_PLAYS = 10_000_000  # elements of one array (a bound on what decode allocates: the bytes are already there)


class ObservationError(ValueError):
    """The observations are not what the audit's recorder writes (a forgery or a truncated file)."""


class ArrayTable:
    """Child side: arrays stored once by content (consecutive snapshots share most atoms' points)."""

    def __init__(self):
        self.index: dict = {}
        self.items: list = []

    def add(self, arr: np.ndarray, dtype: str = "<f8") -> int:
        a = np.ascontiguousarray(arr, dtype=dtype)
        key = (dtype, a.shape, a.tobytes())
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.items)
            self.items.append(key)
        return k

    def encode(self) -> list:
        return [{"dtype": d, "shape": list(s), "b64": base64.b64encode(b).decode("ascii")} for d, s, b in self.items]


def _encode_atom(a: Atom, arrays: ArrayTable, classes: dict) -> dict:
    cls = classes.setdefault(id(a.cls_key), (len(classes), a.cls_key))[0]
    rec = {"id": str(a.id), "cls": cls, "cls_name": str(a.cls_name), "xy": arrays.add(a.xy),
           "children": [arrays.add(c) for c in a.children_xy], "user_id": None if a.user_id is None else str(a.user_id)}
    for name in _STYLE:
        rec[name] = float(getattr(a, name))
    for name in _FLAGS:
        rec[name] = bool(getattr(a, name))
    r = a.rings
    rec["rings"] = None if r is None else [arrays.add(r.x0), arrays.add(r.y0), arrays.add(r.x1), arrays.add(r.y1),
                                           arrays.add(r.member_starts, "<i8")]
    return rec


@dataclass
class RawSnapshot:
    """One checkpoint as the child saw it: its atoms, the frame half-size and centre (no verdict)."""

    label: str
    atoms: list
    half: tuple
    center: tuple | None = None
    frame: object = None     # RGBA array, child side only (save_images)
    picture: object = None   # pictures.capture_checkpoint record, child side only
    play: int = -1           # index of the play this checkpoint followed (the scene's timeline)
    camera: tuple = (0.0, 0.0, 14.222222222222221, 8.0)   # centre x, y, width, height of the drawn frame
    background: tuple = (0.0, 0.0, 0.0)                    # the camera's background colour (0..1)
    drawn: list = field(default_factory=list)              # atoms.drawn_members: (row or rows, owner Atom|None)

    def drop_payload(self) -> None:
        """A snapshot the segment log can no longer pick keeps only its label."""
        self.atoms, self.frame, self.picture, self.drawn = None, None, None, None


def encode_snapshot(snap: RawSnapshot, arrays: ArrayTable, classes: dict) -> dict:
    """One snapshot: each distinct ``Atom`` object once in its ``table`` (the reference walk repeats one shared
    object, and identity matters to the cascade), ``atoms`` the walk's order as indices into it."""
    local: dict = {}
    table, order = [], []
    for a in snap.atoms:
        k = local.get(id(a))
        if k is None:
            k = local[id(a)] = len(table)
            table.append(_encode_atom(a, arrays, classes))
        order.append(k)
    blocks = []
    for rows, owner in snap.drawn or ():
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, DRAWN_WIDTH - 1)
        who = float(local.get(id(owner), -1)) if owner is not None else -1.0
        blocks.append(np.concatenate([rows, np.full((len(rows), 1), who)], axis=1))
    drawn = np.concatenate(blocks) if blocks else np.zeros((0, DRAWN_WIDTH))
    return {"label": snap.label, "table": table, "atoms": order,
            "half": [float(snap.half[0]), float(snap.half[1])],
            "center": None if snap.center is None else [float(snap.center[0]), float(snap.center[1])],
            "witness": {"play": int(snap.play), "camera": [float(v) for v in snap.camera],
                        "background": [float(v) for v in snap.background], "drawn": arrays.add(drawn)}}


def encode_scenes(scenes: list) -> dict:
    """``scenes``: ``[(name, kept snapshots, segment indices, salvage, taken[, plays])]`` -> the observations
    document (``plays``: ``atoms.play_timing`` of every play of the scene)."""
    arrays, classes = ArrayTable(), {}
    out = []
    for name, snaps, segments, salvage, taken, *rest in scenes:
        plays = rest[0] if rest else []
        out.append({"name": str(name), "snapshots": [encode_snapshot(s, arrays, classes) for s in snaps],
                    "segments": list(segments), "salvage": bool(salvage), "taken": int(taken),
                    "plays": [[float(d), bool(f), bool(k), float(t)] for d, f, k, t in plays]})
    return {"version": VERSION, "arrays": arrays.encode(), "scenes": out}


@dataclass
class SceneRecord:
    """Parent side: one scene's kept snapshots, the segment picks and whether the salvage pick applies."""

    name: str
    snapshots: list            # [(label, [Atom], lx, ly, center | None)]
    segments: list             # indices into snapshots
    salvage: bool
    taken: int = 0             # snapshots the child took (informational)
    plays: list = field(default_factory=list)     # [(duration, frozen, skipped, stopped at)] of every play
    witness: list = field(default_factory=list)   # per snapshot: SnapshotWitness


@dataclass
class SnapshotWitness:
    """Parent side: what the video witness compares with the frames at one checkpoint (audit/witness.py)."""

    play: int
    camera: tuple              # centre x, centre y, width, height
    background: tuple          # r, g, b in 0..1
    drawn: np.ndarray          # (K, DRAWN_WIDTH): atoms.DRAWN_COLUMNS + the owner's index in the snapshot's table


@dataclass
class Observations:
    scenes: list = field(default_factory=list)   # [SceneRecord], in the report's key order


def _need(cond: bool, why: str) -> None:
    if not cond:
        raise ObservationError(why)


def _num(v, what: str) -> float:
    _need(type(v) in (float, int) and not isinstance(v, bool), f"{what}: not a number")
    return float(v)


def _arrays(raw) -> list:
    _need(isinstance(raw, list), "arrays: not a list")
    out = []
    for k, item in enumerate(raw):
        _need(isinstance(item, dict), f"arrays[{k}]: not an object")
        dtype, shape, b64 = item.get("dtype"), item.get("shape"), item.get("b64")
        _need(dtype in ("<f8", "<i8"), f"arrays[{k}]: dtype")
        _need(isinstance(shape, list) and 1 <= len(shape) <= _MAX_DIMS
              and all(type(s) is int and 0 <= s <= _MAX_ITEMS for s in shape), f"arrays[{k}]: shape")
        _need(isinstance(b64, str), f"arrays[{k}]: data")
        n = int(np.prod(shape, dtype=np.int64))
        _need(n <= _MAX_ITEMS, f"arrays[{k}]: too large")
        try:
            data = base64.b64decode(b64.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError) as exc:
            raise ObservationError(f"arrays[{k}]: {exc}") from None
        _need(len(data) == 8 * n, f"arrays[{k}]: {len(data)} bytes for shape {shape}")
        arr = np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype[1:], copy=True)
        out.append(arr)
    return out


def _array(arrays: list, k, what: str, ndim: int, cols: int | None = None) -> np.ndarray:
    _need(type(k) is int and 0 <= k < len(arrays), f"{what}: array index")
    a = arrays[k]
    _need(a.ndim == ndim and (cols is None or a.shape[1] == cols), f"{what}: shape {a.shape}")
    return a


def _atom(rec, arrays: list, what: str) -> Atom:
    _need(isinstance(rec, dict), f"{what}: not an object")
    _need(isinstance(rec.get("id"), str) and isinstance(rec.get("cls_name"), str), f"{what}: names")
    _need(type(rec.get("cls")) is int and rec["cls"] >= 0, f"{what}: class key")
    user_id = rec.get("user_id")
    _need(user_id is None or isinstance(user_id, str), f"{what}: user_id")
    for name in _FLAGS:
        _need(type(rec.get(name)) is bool, f"{what}: {name}")
    xy = _array(arrays, rec.get("xy"), f"{what}.xy", 2, 2)
    children = rec.get("children")
    _need(isinstance(children, list), f"{what}: children")
    kids = tuple(_array(arrays, c, f"{what}.children", 2, 2) for c in children)
    rings = rec.get("rings")
    if rings is not None:
        _need(isinstance(rings, list) and len(rings) == 5, f"{what}: rings")
        cols = [_array(arrays, r, f"{what}.rings", 1) for r in rings]
        n = len(cols[0])
        _need(all(c.dtype == np.float64 and len(c) == n for c in cols[:4]) and cols[4].dtype == np.int64,
              f"{what}: ring columns")
        starts = cols[4]  # (polygon.rings_from_members: each member's first edge, members without a ring left out)
        _need(len(starts) == 0 if n == 0 else (len(starts) > 0 and starts[0] == 0 and bool(np.all(starts < n))
                                               and bool(np.all(np.diff(starts) > 0))), f"{what}: ring starts")
        rings = Rings(*cols)
    return Atom(id=rec["id"], cls_key=rec["cls"], cls_name=rec["cls_name"], xy=xy, children_xy=kids, rings=rings,
                user_id=user_id, **{n: _num(rec.get(n), f"{what}.{n}") for n in _STYLE},
                **{n: rec[n] for n in _FLAGS})


def _point(v, what: str) -> tuple:
    _need(isinstance(v, list) and len(v) == 2, f"{what}: not a pair")
    return _num(v[0], what), _num(v[1], what)


def _witness(raw, arrays: list, n_table: int, what: str) -> SnapshotWitness:
    _need(isinstance(raw, dict), f"{what}: witness")
    play = raw.get("play")
    _need(type(play) is int, f"{what}: witness play")
    cam = raw.get("camera")
    _need(isinstance(cam, list) and len(cam) == 4, f"{what}: camera")
    cam = tuple(_num(v, f"{what}.camera") for v in cam)
    _need(all(np.isfinite(cam)) and cam[2] > 0 and cam[3] > 0, f"{what}: camera")
    bg = raw.get("background")
    _need(isinstance(bg, list) and len(bg) == 3, f"{what}: background")
    bg = tuple(_num(v, f"{what}.background") for v in bg)
    _need(all(0.0 <= v <= 1.0 for v in bg), f"{what}: background")
    drawn = _array(arrays, raw.get("drawn"), f"{what}.drawn", 2, DRAWN_WIDTH)
    _need(drawn.dtype == np.float64 and bool(np.all(np.isfinite(drawn))), f"{what}: drawn values")
    owner = drawn[:, -1]
    _need(bool(np.all((owner == np.round(owner)) & (owner >= -1) & (owner < n_table))), f"{what}: drawn owners")
    return SnapshotWitness(play, cam, bg, drawn)


def decode(doc) -> Observations:
    """The parent's reader of the child's observations document (strict: :class:`ObservationError`)."""
    _need(isinstance(doc, dict), "not an object")
    _need(doc.get("version") == VERSION, "version")
    arrays = _arrays(doc.get("arrays"))
    scenes = doc.get("scenes")
    _need(isinstance(scenes, list), "scenes: not a list")
    out = Observations()
    seen = set()
    for s, scene in enumerate(scenes):
        what = f"scenes[{s}]"
        # a class name (the parent names files after it: nothing but an identifier)
        _need(isinstance(scene, dict) and isinstance(scene.get("name"), str) and scene["name"].isidentifier(),
              f"{what}: name")
        _need(scene["name"] not in seen, f"{what}: name repeated")
        seen.add(scene["name"])
        snaps_raw = scene.get("snapshots")
        _need(isinstance(snaps_raw, list), f"{what}: snapshots")
        snaps, witness = [], []
        for i, snap in enumerate(snaps_raw):
            w = f"{what}.snapshots[{i}]"
            _need(isinstance(snap, dict) and isinstance(snap.get("label"), str)
                  and _LABEL.fullmatch(snap["label"]) is not None, f"{w}: label")
            table = snap.get("table")
            _need(isinstance(table, list), f"{w}: table")
            atoms = [_atom(rec, arrays, f"{w}.table[{k}]") for k, rec in enumerate(table)]
            idx = snap.get("atoms")
            _need(isinstance(idx, list) and all(type(k) is int and 0 <= k < len(atoms) for k in idx), f"{w}: atoms")
            lx, ly = _point(snap.get("half"), f"{w}.half")
            center = snap.get("center")
            center = None if center is None else np.asarray(_point(center, f"{w}.center"), dtype=np.float64)
            snaps.append((snap["label"], [atoms[k] for k in idx], lx, ly, center))
            witness.append(_witness(snap.get("witness"), arrays, len(table), w))
        segments = scene.get("segments")
        _need(isinstance(segments, list) and all(type(k) is int and 0 <= k < len(snaps) for k in segments),
              f"{what}: segments")
        salvage = scene.get("salvage")
        _need(type(salvage) is bool and (not salvage or (not segments and snaps)), f"{what}: salvage")
        taken = scene.get("taken", 0)
        _need(type(taken) is int and taken >= 0, f"{what}: taken")
        plays = scene.get("plays")
        _need(isinstance(plays, list) and len(plays) <= _MAX_PLAYS, f"{what}: plays")
        timing = []
        for p in plays:
            _need(isinstance(p, list) and len(p) == 4 and type(p[1]) is bool and type(p[2]) is bool, f"{what}: play")
            d, t = _num(p[0], f"{what}: play duration"), _num(p[3], f"{what}: play stop")
            _need(np.isfinite(d) and 0.0 <= d <= 1e7 and np.isfinite(t) and -1.0 <= t <= 1e7, f"{what}: play timing")
            timing.append((d, p[1], p[2], t))
        played = [sw.play for sw in witness]
        _need(all(-1 <= p < len(timing) for p in played) and played == sorted(played), f"{what}: snapshot plays")
        out.scenes.append(SceneRecord(scene["name"], snaps, segments, salvage, taken, timing, witness))
    return out


__all__ = ["ArrayTable", "DRAWN_WIDTH", "ObservationError", "Observations", "RawSnapshot", "SceneRecord",
           "SnapshotWitness", "STAND_IN", "VERSION",
           "decode", "encode_scenes", "encode_snapshot"]
