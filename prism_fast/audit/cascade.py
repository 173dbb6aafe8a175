"""Per-snapshot checks: OOB and the pairwise exemption cascade (spec spatial_audit.md §9).

Pure: operates on ``Atom`` records (plain data extracted from Manim in the child process, see
``atoms.py``); no Manim import here. The first matching rule decides; rules are evaluated in the order of
§9.3 (it matters only for leak vs overlap, but is kept anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from prism_fast.audit import ids as idf
from prism_fast.audit.config import AuditConfig
from prism_fast.audit.polygon import (
    EngineStats, Rings, cover, cover_rings, leak, leak_rings, oob, pair_ratios, pair_ratios_rings, rings_from_members,
    round3,
)

CHART_KW = ("graph", "axes", "axis", "label", "tick", "plot")
DECO_KW = ("highlight",)
LINE_KW = ("curve", "graph", "plot", "path", "line", "grid")
TIP_CLASSES = ("ArrowTriangleFilledTip", "ArrowTip", "ArrowTriangleTip")
TIP_KW = ("arrowtrianglefilledtip", "arrowtip", "arrowtriangletip")
SEPARATOR_KW = ("boundary", "divider", "separator", "dashedline", "split")
ANNOTATION_KW = ("label", "text", "tag", "note", "caption", "nomatch", "match", "hint", "desc")
FOCUS_KW = ("focus", "highlight", "emphasis", "callout", "marker", "frame")
GRID_KW = ("grid", "sq", "cell", "window", "kernel", "patch", "response", "obj_pos", "input", "output")
REGION_KW = ("zone", "segment", "region", "bar", "part", "block")


@dataclass(eq=False)
class Atom:
    """One audited mobject, as plain data. ``xy`` is ``get_all_points()[:, :2]`` (float64, in order)."""

    id: str
    cls_key: Any                  # identity of the class: "identical class" compares these
    cls_name: str
    xy: np.ndarray
    fill: float = 0.0             # own first fill opacity (0.0 when the call raises)
    sw: float = 0.0               # own first stroke width
    sop: float = 0.0              # own first stroke opacity
    is_vmobject: bool = False
    is_item: bool = False         # Text, Paragraph, MathTex, Tex, ImageMobject, Integer, DecimalNumber
    is_container: bool = False    # RoundedRectangle, Rectangle, Circle, Ellipse
    is_text_like: bool = False    # Text, Paragraph, MathTex, Tex
    is_line_class: bool = False   # Line, Arrow, Vector, DoubleArrow, ParametricFunction, FunctionGraph,
    #                               CubicBezier, Arc (so every Circle)
    is_rectangle: bool = False    # isinstance Rectangle (covers Square, RoundedRectangle)
    is_square: bool = False
    is_circle: bool = False
    is_dashed_line: bool = False
    children_xy: tuple = ()       # direct submobjects with points (used for TEXT_LIKE items, rule 19c)
    user_id: str | None = None    # the id's user-named components only (Q-SPATIAL-17 fixed)
    rings: Any = None             # Q-SPATIAL-13 fixed: polygon.Rings (per-member closed rings); xy then
    #                               holds the curve samples. None = reference: xy is one implicit chain


@dataclass
class SnapshotIssues:
    out_of_bounds: list = field(default_factory=list)   # [{"id", "dist"}]
    overlaps: list = field(default_factory=list)        # [{"ids": [id1, id2], "ratio"}]
    leaks: list = field(default_factory=list)           # [{"id", "cont_id", "ratio"}]
    stats: EngineStats | None = None

    def has_issue(self) -> bool:
        return bool(self.out_of_bounds or self.overlaps or self.leaks)


class _View:
    """Per-atom values computed once per snapshot (bbox, ids, style predicates)."""

    def __init__(self, a: Atom, cfg: AuditConfig, lx: float, ly: float, per_component_ids: bool,
                 filled_lines_not_line_like: bool = False, user_name_keywords: bool = False):
        self.a = a
        self.n = len(a.xy)
        self.bmin = np.min(a.xy, axis=0)
        self.bmax = np.max(a.xy, axis=0)
        self.size = np.maximum(self.bmax - self.bmin, 1e-6)
        self.center = (self.bmin + self.bmax) / 2
        self.lid = a.id.lower()
        self.parent = idf.parent_id(a.id, per_component_ids)
        self.parent_lower = idf.parent_id(self.lid, per_component_ids)
        self.family = idf.family(a.id, per_component_ids)
        self.box_like = self._box_like(cfg)
        self.outline = a.is_container and a.fill <= cfg.outline_fill_max and a.sop > 0 and a.sw > 0
        self.visible_fill = a.fill > cfg.visible_fill_min
        line_class = a.is_line_class
        if filled_lines_not_line_like and a.fill > 1e-3:  # Q-SPATIAL-16 fixed: a filled Circle is a shape
            line_class = False
        self.line_like = line_class or (a.is_vmobject and (
            (a.fill <= cfg.line_fill_max and a.sw > 0 and a.sop > 0)
            or (any(k in self.lid for k in LINE_KW) and a.fill <= cfg.line_fill_max)))
        self.tip = a.cls_name in TIP_CLASSES or any(k in self.lid for k in TIP_KW)
        self.separator = (any(k in self.lid for k in SEPARATOR_KW)
                          or any(k in self.parent_lower for k in SEPARATOR_KW) or a.is_dashed_line)
        if user_name_keywords:  # Q-SPATIAL-17 fixed: keywords only in names the user assigned
            keyword_id = (a.user_id or "").lower()
        else:  # Q-SPATIAL-17 reference: default class names count ("Text" contains "text")
            keyword_id = self.lid
        self.annotation = a.is_text_like and any(k in keyword_id for k in ANNOTATION_KW)
        frame_area = max((lx * 2.0) * (ly * 2.0), 1e-6)
        self.focus_box = (any(k in self.lid for k in FOCUS_KW) and self.box_like and self.outline
                          and float(self.size[0] * self.size[1]) / frame_area < cfg.focus_area_frac)
        self.repeated = False  # filled in by the snapshot (needs the sibling groups)

    def _box_like(self, cfg: AuditConfig) -> bool:
        a = self.a
        if a.is_rectangle:
            return True
        if not a.is_vmobject or self.n < 4:
            return False
        aspect = max(self.size[0], self.size[1]) / max(min(self.size[0], self.size[1]), 1e-6)
        return a.sw > 0 and aspect <= cfg.box_aspect_max


def _rel_size_diff(v1: _View, v2: _View) -> float:
    return np.max(np.abs(v1.size - v2.size) / np.maximum(np.maximum(v1.size, v2.size), 1e-6))


def _rel(p: float, q: float) -> float:
    return abs(p - q) / max(p, q, 1e-6)


class _Snapshot:
    def __init__(self, atoms: Sequence[Atom], cfg: AuditConfig, lx: float, ly: float, per_component_ids: bool,
                 composite_needs_parent: bool, counts_inside: dict | None = None,
                 filled_lines_not_line_like: bool = False, user_name_keywords: bool = False):
        self.cfg = cfg
        self.atoms = atoms
        self.composite_needs_parent = composite_needs_parent
        self.v = [_View(a, cfg, lx, ly, per_component_ids, filled_lines_not_line_like, user_name_keywords)
                  for a in atoms]
        self.by_parent: dict[str, list[int]] = {}
        for k, view in enumerate(self.v):
            self.by_parent.setdefault(view.parent, []).append(k)
        # Q-SPATIAL-20 reference: an object reachable twice is one Atom at several indices (same id, same
        # parent); the toolkit's "a sibling other than itself" (`is not`) excludes every copy of it
        copies: dict[int, int] = {}
        for a in atoms:
            copies[id(a)] = copies.get(id(a), 0) + 1
        self.copies = [copies[id(a)] for a in atoms]
        counts: dict[tuple, int] = {}
        for view in self.v:
            key = (view.parent, view.a.cls_key, view.family)
            counts[key] = counts.get(key, 0) + 1
        for view in self.v:
            view.repeated = counts[(view.parent, view.a.cls_key, view.family)] >= cfg.repeated_min
        # per parent group: outline atoms (total and per class) and visibly filled atoms
        self.outline_n: dict[str, int] = {}
        self.outline_cls_n: dict[tuple, int] = {}
        self.filled_n: dict[str, int] = {}
        for view in self.v:
            if view.outline:
                self.outline_n[view.parent] = self.outline_n.get(view.parent, 0) + 1
                key = (view.parent, view.a.cls_key)
                self.outline_cls_n[key] = self.outline_cls_n.get(key, 0) + 1
            if view.visible_fill:
                self.filled_n[view.parent] = self.filled_n.get(view.parent, 0) + 1
        self.counts = counts_inside or {}
        self._leak_memo: dict = {}
        self.use_rings = any(a.rings is not None for a in atoms)  # Q-SPATIAL-13 fixed

    def region(self, k: int) -> Rings:
        """Atom k's rings (improved geometry); an atom without rings is its xy chain as one ring."""
        a = self.atoms[k]
        if a.rings is None:
            a.rings = rings_from_members([[a.xy]])
        return a.rings

    def cover_pts(self, xy: np.ndarray, k: int) -> float:
        """cover(points xy, atom k)."""
        if self.use_rings:
            return cover_rings(xy, self.atoms[k].xy, self.region(k))
        return cover(xy, self.atoms[k].xy)

    def leak_pts(self, xy: np.ndarray, k: int) -> float:
        """leak(points xy, atom k)."""
        if self.use_rings:
            return leak_rings(xy, self.region(k))
        return leak(xy, self.atoms[k].xy)

    # ---- predicates needing the sibling groups
    def has_outline_sibling(self, k: int) -> bool:
        v = self.v[k]
        return bool(v.parent) and self.outline_n.get(v.parent, 0) - self.copies[k] * int(v.outline) > 0

    def diagram_boundary(self, k: int) -> bool:
        v = self.v[k]
        if not v.outline or not v.parent:
            return False
        same_class_outline_others = self.outline_cls_n.get((v.parent, v.a.cls_key), 0) - self.copies[k]
        filled_others = self.filled_n.get(v.parent, 0) - self.copies[k] * int(v.visible_fill)
        return same_class_outline_others >= 1 and filled_others > 0

    def leak(self, a: int, c: int) -> float:
        """leak(a, c); reuses the engine's inside count of (a in c) when it has one."""
        key = (a, c)
        if key not in self._leak_memo:
            n_a, n_c = len(self.atoms[a].xy), len(self.atoms[c].xy)
            has_region = self.region(c).n_edges > 0 if self.use_rings else n_c >= 3
            if key in self.counts and n_a > 0 and has_region:
                self._leak_memo[key] = round3((n_a - self.counts[key]) / n_a)
            else:
                self._leak_memo[key] = self.leak_pts(self.atoms[a].xy, c)
        return self._leak_memo[key]

    # ---- rules 3..12
    def highlight_label_pair(self, i, j, r) -> bool:
        if r >= self.cfg.highlight_label_r_max:
            return False
        v = self.v

        def is_label(k):
            return v[k].a.is_text_like and self.has_outline_sibling(k)

        if is_label(i) and v[j].repeated:
            label, rep = i, j
        elif is_label(j) and v[i].repeated:
            label, rep = j, i
        else:
            return False
        return v[label].parent != v[rep].parent

    def edge_touching_boxes(self, i, j) -> bool:
        v1, v2 = self.v[i], self.v[j]
        if not v1.box_like or not v2.box_like:
            return False
        mn1, mx1, mn2, mx2 = v1.bmin, v1.bmax, v2.bmin, v2.bmax
        ox = min(mx1[0], mx2[0]) - max(mn1[0], mn2[0])
        oy = min(mx1[1], mx2[1]) - max(mn1[1], mn2[1])
        tol = self.cfg.edge_tol
        touch_x = abs(mx1[0] - mn2[0]) <= tol or abs(mx2[0] - mn1[0]) <= tol
        touch_y = abs(mx1[1] - mn2[1]) <= tol or abs(mx2[1] - mn1[1]) <= tol
        span_y = _rel(v1.size[1], v2.size[1]) <= self.cfg.edge_span_rel
        span_x = _rel(v1.size[0], v2.size[0]) <= self.cfg.edge_span_rel
        horizontal = touch_x and oy > tol and ox <= tol and span_y
        vertical = touch_y and ox > tol and oy <= tol and span_x
        return horizontal or vertical

    def overlay_highlight_pair(self, i, j) -> bool:
        v1, v2 = self.v[i], self.v[j]
        a1, a2 = v1.a, v2.a
        if a1.cls_key != a2.cls_key or not (a1.is_rectangle or a1.is_circle):
            return False
        close = np.linalg.norm(v1.center - v2.center) <= self.cfg.overlay_center_max
        if not close or _rel_size_diff(v1, v2) > self.cfg.overlay_size_rel:
            return False
        contrast = (abs(a1.fill - a2.fill) >= self.cfg.overlay_fill_contrast
                    or abs(a1.sw - a2.sw) >= self.cfg.overlay_stroke_contrast)
        return v1.parent != v2.parent and contrast

    def overlay_neighbor_residual(self, i, j, r) -> bool:
        if r > self.cfg.neighbor_residual_r_max:
            return False
        v1, v2 = self.v[i], self.v[j]
        if v1.a.cls_key != v2.a.cls_key or not v1.a.is_square:
            return False
        if not (v1.repeated and v2.repeated):
            return False
        if _rel_size_diff(v1, v2) > self.cfg.neighbor_size_rel:
            return False
        d = np.abs(v1.center - v2.center)
        side = float(max(v1.size[0], v1.size[1], v2.size[0], v2.size[1]))
        lo, hi, cross = self.cfg.neighbor_step_min, self.cfg.neighbor_step_max, self.cfg.neighbor_cross_max
        return ((lo * side <= d[0] <= hi * side and d[1] <= cross * side)
                or (lo * side <= d[1] <= hi * side and d[0] <= cross * side))

    def grid_local_overlay_pair(self, i, j, r) -> bool:
        if r > self.cfg.grid_local_r_max:
            return False
        v1, v2 = self.v[i], self.v[j]
        if v1.a.cls_key != v2.a.cls_key or not v1.a.is_rectangle:
            return False
        if _rel_size_diff(v1, v2) > self.cfg.grid_local_size_rel:
            return False
        if not (v1.repeated or v2.repeated):
            return False
        if v1.repeated and v2.repeated and v1.parent == v2.parent and v1.family == v2.family:
            return True
        if not (any(k in v1.lid for k in GRID_KW) or any(k in v2.lid for k in GRID_KW)):
            return False
        side = float(max(v1.size[0], v1.size[1], v2.size[0], v2.size[1]))
        d = np.abs(v1.center - v2.center)
        return bool(np.linalg.norm(v1.center - v2.center) <= self.cfg.grid_local_center_max
                    or (d[0] <= self.cfg.grid_local_neighbor_max * side
                        and d[1] <= self.cfg.grid_local_neighbor_max * side))

    def table_cell_rect_pair(self, i, j, r) -> bool:
        if r > self.cfg.table_cell_r_max:
            return False
        v1, v2 = self.v[i], self.v[j]
        if v1.a.cls_key != v2.a.cls_key or not v1.a.is_rectangle:
            return False
        p1, p2 = idf.norm_parts(v1.lid), idf.norm_parts(v2.lid)
        if len(p1) < 3 or len(p2) < 3 or p1[-2:] != ["cell", "rect"] or p2[-2:] != ["cell", "rect"]:
            return False

        def table_signal(parts):
            return any("row" in t or "header" in t or "table" in t or "grid" in t or t == "r"
                       or t.startswith("hrow") for t in parts[:-2])

        if not (table_signal(p1) and table_signal(p2)):
            return False
        ox = min(v1.bmax[0], v2.bmax[0]) - max(v1.bmin[0], v2.bmin[0])
        oy = min(v1.bmax[1], v2.bmax[1]) - max(v1.bmin[1], v2.bmin[1])
        return ox <= self.cfg.table_cell_tol or oy <= self.cfg.table_cell_tol

    def composite_region_pair(self, i, j) -> bool:
        v1, v2 = self.v[i], self.v[j]
        if not v1.box_like or not v2.box_like:
            return False
        area1 = float(v1.size[0] * v1.size[1])
        area2 = float(v2.size[0] * v2.size[1])
        big, small = (v1, v2) if area1 >= area2 else (v2, v1)
        ls, ss = big.size, small.size
        if (ls[0] * ls[1]) / max(ss[0] * ss[1], 1e-6) < self.cfg.composite_area_ratio:
            return False
        c = self.cfg
        horizontal = (_rel(ls[0], ss[0]) <= c.composite_size_rel
                      and abs(big.center[0] - small.center[0]) <= c.composite_center_max
                      and ss[1] < c.composite_small_frac * ls[1]
                      and min(big.bmax[1], small.bmax[1]) - max(big.bmin[1], small.bmin[1])
                      > c.composite_small_frac * ss[1])
        vertical = (_rel(ls[1], ss[1]) <= c.composite_size_rel
                    and abs(big.center[1] - small.center[1]) <= c.composite_center_max
                    and ss[0] < c.composite_small_frac * ls[0]
                    and min(big.bmax[0], small.bmax[0]) - max(big.bmin[0], small.bmin[0])
                    > c.composite_small_frac * ss[0])
        name_signal = any(k in v1.lid or k in v2.lid for k in REGION_KW)
        same_parent = v1.parent_lower == v2.parent_lower
        if self.composite_needs_parent:  # Q-SPATIAL-18 fixed: "" == "" is not a shared parent
            same_parent = same_parent and bool(v1.parent_lower)
        return (horizontal or vertical) and (same_parent or name_signal)

    def embedded_band_pair(self, i, j) -> bool:
        v1, v2 = self.v[i], self.v[j]
        if not v1.box_like or not v2.box_like or not (v1.visible_fill and v2.visible_fill):
            return False
        area1 = float(v1.size[0] * v1.size[1])
        area2 = float(v2.size[0] * v2.size[1])
        big, small = (v1, v2) if area1 >= area2 else (v2, v1)
        if not any(k in big.lid for k in ("body", "base")):
            return False
        if not any(k in small.lid for k in ("band", "stripe", "ring")):
            return False
        c = self.cfg
        ls, ss, sc = big.size, small.size, small.center
        inside = bool(np.all(sc >= big.bmin - c.band_center_tol) and np.all(sc <= big.bmax + c.band_center_tol))
        side_match = _rel(ls[0], ss[0]) <= c.band_side_rel or _rel(ls[1], ss[1]) <= c.band_side_rel
        narrow = min(ss[0] / max(ls[0], 1e-6), ss[1] / max(ls[1], 1e-6)) <= c.band_narrow_max
        area_gap = (ls[0] * ls[1]) / max(ss[0] * ss[1], 1e-6) >= c.band_area_ratio
        return inside and side_match and narrow and area_gap

    def local_focus_label_pair(self, i, j, r) -> bool:
        if r >= self.cfg.focus_label_r_max:
            return False
        v1, v2 = self.v[i], self.v[j]
        return (v1.focus_box and v2.a.is_text_like) or (v2.focus_box and v1.a.is_text_like)

    def window_annotation_pair(self, i, j, r) -> bool:
        if r >= self.cfg.window_annotation_r_max:
            return False
        v1, v2 = self.v[i], self.v[j]
        if v1.a.is_text_like and v2.box_like:
            label, box = v1, v2
        elif v2.a.is_text_like and v1.box_like:
            label, box = v2, v1
        else:
            return False
        return "window" in label.lid and box.repeated

    def structured_sibling_pair(self, i, j, r) -> bool:
        v1, v2 = self.v[i], self.v[j]
        if not v1.parent or v1.parent != v2.parent or r >= self.cfg.structured_sibling_r_max:
            return False
        if v1.line_like or v2.line_like or v1.family != v2.family or v1.a.cls_key != v2.a.cls_key:
            return False
        return _rel_size_diff(v1, v2) <= self.cfg.structured_size_rel

    # ---- rule 19 helpers
    def text_outline_highlight(self, item, cont) -> bool:
        vi, vc = self.v[item], self.v[cont]
        if not vi.a.is_text_like or not vc.outline:
            return False
        tol = self.cfg.outline_center_tol
        inside = bool(np.all(vi.center >= vc.bmin - tol) and np.all(vi.center <= vc.bmax + tol))
        ratio = vc.size / vi.size
        return inside and bool(np.all(ratio >= self.cfg.outline_size_min) and np.all(ratio <= self.cfg.outline_size_max))

    def partial_highlight(self, item, cont, lr) -> bool:
        if lr <= self.cfg.container_leak_allowed:
            return False
        vi, vc = self.v[item], self.v[cont]
        if not vi.a.is_text_like or not vc.outline:
            return False
        children = [xy for xy in vi.a.children_xy if len(xy) > 0]
        n = len(children)
        if n < 2:
            return False
        inside = sum(1 for xy in children
                     if self.leak_pts(xy, cont) <= self.cfg.partial_child_leak_max
                     or self.cover_pts(xy, cont) >= self.cfg.partial_child_cover_min)
        need = 1 if n <= 4 else max(2, int(np.ceil(n * self.cfg.partial_frac)))
        return need <= inside < n

    def directional_tolerance(self, item, cont) -> bool:
        vi, vc = self.v[item], self.v[cont]
        if not vi.a.is_text_like:
            return False
        left = max(0.0, float(vc.bmin[0] - vi.bmin[0]))
        right = max(0.0, float(vi.bmax[0] - vc.bmax[0]))
        bottom = max(0.0, float(vc.bmin[1] - vi.bmin[1]))
        top = max(0.0, float(vi.bmax[1] - vc.bmax[1]))
        h = (left + right) / float(vi.size[0])
        vv = (bottom + top) / float(vi.size[1])
        return h <= self.cfg.directional_h_max and vv <= self.cfg.directional_v_max

    # ---- the cascade for one pair: returns None, ("leak", item, cont, lr) or ("overlap", r)
    def judge(self, i: int, j: int, r: float):
        c = self.cfg
        if r < c.cover_min:
            return None
        v1, v2 = self.v[i], self.v[j]
        id1, id2 = v1.lid, v2.lid
        if any(k in id1 for k in CHART_KW) and any(k in id2 for k in CHART_KW) and r < c.chart_r_max:
            return None
        if (any(k in id1 for k in DECO_KW) or any(k in id2 for k in DECO_KW)) and r < c.deco_r_max:
            return None
        if self.highlight_label_pair(i, j, r) or self.edge_touching_boxes(i, j):
            return None
        if self.overlay_highlight_pair(i, j) or self.overlay_neighbor_residual(i, j, r):
            return None
        if self.grid_local_overlay_pair(i, j, r) or self.table_cell_rect_pair(i, j, r):
            return None
        if self.composite_region_pair(i, j) or self.embedded_band_pair(i, j):
            return None
        if self.local_focus_label_pair(i, j, r) or self.window_annotation_pair(i, j, r):
            return None
        if (v1.tip or v2.tip) and r < c.tip_r_max:
            return None
        a1, a2 = v1.a, v2.a
        if ((v1.separator and a2.is_text_like) or (v2.separator and a1.is_text_like)) and r < c.separator_r_max:
            return None
        if ((v1.annotation and v2.repeated) or (v2.annotation and v1.repeated)) and r < c.annotation_r_max:
            return None
        l1, l2 = v1.line_like, v2.line_like
        if l1 and l2:
            return None
        if (l1 and a2.is_container) or (l2 and a1.is_container):
            return None
        if (l1 and not a2.is_item) or (l2 and not a1.is_item):
            return None
        if v1.parent and v1.parent == v2.parent and not (a1.is_item or a2.is_item):
            return None
        if self.structured_sibling_pair(i, j, r):
            return None
        if a1.is_container and a2.is_item:
            cont, item = i, j
        elif a2.is_container and a1.is_item:
            cont, item = j, i
        else:
            cont = item = None
        if cont is not None:
            if self.text_outline_highlight(item, cont) or self.diagram_boundary(cont):
                return None
            if self.partial_highlight(item, cont, 1.0):
                return None
            lr = self.leak(item, cont)
            if lr <= c.container_leak_allowed:
                return None
            if self.directional_tolerance(item, cont) or self.partial_highlight(item, cont, lr):
                return None
            if self.window_annotation_pair(item, cont, lr):
                return None
            # the toolkit's parent_map test is always true here (spec §9.3 step 19g)
            if c.leak_min < lr <= c.leak_max:
                return ("leak", item, cont, lr)
        if r > c.overlap_cap:
            return None
        return ("overlap", r)


def check_snapshot(
    atoms: Sequence[Atom],
    cfg: AuditConfig,
    lx: float,
    ly: float,
    per_component_ids: bool = False,
    composite_needs_parent: bool = False,
    filled_lines_not_line_like: bool = False,
    user_name_keywords: bool = False,
    center=None,
) -> SnapshotIssues:
    """OOB for every atom and the cascade for every pair i < j (spec §9).

    Improved-profile switches (False in reference): ``per_component_ids`` Q-SPATIAL-14,
    ``composite_needs_parent`` Q-SPATIAL-18, ``filled_lines_not_line_like`` Q-SPATIAL-16,
    ``user_name_keywords`` Q-SPATIAL-17.
    """
    if not cfg.cover_min > 0:
        raise ValueError("cover_min must be > 0 (pairs with disjoint bboxes are never evaluated)")
    out = SnapshotIssues()
    for a in atoms:
        # center: Q-SPATIAL-1 fixed (moving camera frame); the reference frame is centred on the origin
        d = oob(a.xy if center is None else a.xy - center, lx, ly)
        if d > cfg.oob_margin:
            out.out_of_bounds.append({"id": a.id, "dist": d})
    if len(atoms) < 2:
        return out
    if any(a.rings is not None for a in atoms):  # Q-SPATIAL-13 fixed: samples tested against per-member rings
        _warn_rings_backend(cfg.geometry_backend)
        ratios, counts, stats = pair_ratios_rings(
            [a.xy for a in atoms], [a.rings if a.rings is not None else rings_from_members([[a.xy]]) for a in atoms])
    else:  # Q-SPATIAL-13 reference: control points, one implicit chain per atom
        ratios, counts, stats = pair_ratios([a.xy for a in atoms], backend=cfg.geometry_backend,
                                            device=cfg.geometry_device, torch_min_tests=cfg.torch_min_tests)
    out.stats = stats
    snap = _Snapshot(atoms, cfg, lx, ly, per_component_ids, composite_needs_parent, counts,
                     filled_lines_not_line_like, user_name_keywords)
    for i, j, r in ratios:
        verdict = snap.judge(i, j, r)
        if verdict is None:
            continue
        if verdict[0] == "leak":
            _, item, cont, lr = verdict
            out.leaks.append({"id": atoms[item].id, "cont_id": atoms[cont].id, "ratio": lr})
        else:
            out.overlaps.append({"ids": [atoms[i].id, atoms[j].id], "ratio": verdict[1]})
    return out


_RINGS_WARNED: set = set()


def _warn_rings_backend(backend: str) -> None:
    """The improved ring geometry has one (NumPy) engine; an explicitly requested other back-end is not used.
    Logged once per process; the engine stats record ``numpy_rings`` (row field ``engine.backends``)."""
    if backend not in ("auto", "numpy") and backend not in _RINGS_WARNED:
        _RINGS_WARNED.add(backend)
        import logging

        logging.getLogger(__name__).warning(
            "audit: geometry_backend=%r is not available for the Q-SPATIAL-13 ring geometry; numpy_rings used",
            backend)


__all__ = ["Atom", "SnapshotIssues", "check_snapshot"]
