"""AuditConfig: every numeric threshold of the spatial audit, with the reference values as defaults.

A plain dataclass (no Hydra objects); the Hydra schema / entry point unpacks into it. Values come from
spec spatial_audit.md §8-§10.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class AuditConfig:
    # ---- §9.1 / §9.3 core thresholds
    oob_margin: float = 0.05            # OOB recorded when d > margin
    cover_min: float = 0.1              # step 0: pairs with r < cover_min are never issues
    overlap_cap: float = 0.98           # step 20: r > cap is never an overlap
    leak_min: float = 0.05              # step 19g: leak recorded when leak_min < lr <= leak_max
    leak_max: float = 0.5
    container_leak_allowed: float = 0.1  # step 19d: lr <= this -> item inside container
    # ---- §9.2 predicates
    box_aspect_max: float = 8.0
    outline_fill_max: float = 0.05
    line_fill_max: float = 1e-3
    visible_fill_min: float = 0.05
    repeated_min: int = 4
    focus_area_frac: float = 0.2
    # ---- §9.3 per-rule limits
    chart_r_max: float = 0.85           # step 1 (exempt when r < this)
    deco_r_max: float = 0.95            # step 2
    highlight_label_r_max: float = 0.6  # step 3 (requires r < this)
    edge_tol: float = 0.03              # step 4
    edge_span_rel: float = 0.15
    overlay_center_max: float = 0.08    # step 5
    overlay_size_rel: float = 0.08
    overlay_fill_contrast: float = 0.15
    overlay_stroke_contrast: float = 0.5
    neighbor_residual_r_max: float = 0.125  # step 6 (requires r <= this)
    neighbor_size_rel: float = 0.08
    neighbor_step_min: float = 0.8      # centre offset within [min, max] x side along one axis ...
    neighbor_step_max: float = 1.2
    neighbor_cross_max: float = 0.2     # ... and <= this x side along the other
    grid_local_r_max: float = 0.13      # step 7 (requires r <= this)
    grid_local_size_rel: float = 0.12
    grid_local_center_max: float = 0.12
    grid_local_neighbor_max: float = 1.2  # |dx|, |dy| <= this x side
    table_cell_r_max: float = 0.13      # step 8 (requires r <= this)
    table_cell_tol: float = 0.03
    composite_area_ratio: float = 1.5   # step 9
    composite_size_rel: float = 0.08
    composite_center_max: float = 0.05
    composite_small_frac: float = 0.8
    band_center_tol: float = 0.05       # step 10
    band_side_rel: float = 0.12
    band_narrow_max: float = 0.35
    band_area_ratio: float = 2.0
    focus_label_r_max: float = 0.5      # step 11 (requires r < this)
    window_annotation_r_max: float = 0.4  # step 12 (requires r < this)
    tip_r_max: float = 0.8              # step 13
    separator_r_max: float = 0.8        # step 14
    annotation_r_max: float = 0.25      # step 15
    structured_sibling_r_max: float = 0.6  # step 18 (requires r < this)
    structured_size_rel: float = 0.2
    outline_center_tol: float = 0.05    # step 19a
    outline_size_min: float = 1.0
    outline_size_max: float = 4.0
    partial_child_leak_max: float = 0.2  # step 19c
    partial_child_cover_min: float = 0.75
    partial_frac: float = 0.2
    directional_h_max: float = 0.1      # step 19e
    directional_v_max: float = 0.2
    # ---- execution (not thresholds of the cascade)
    timeout_sec: float = 900.0
    full_fidelity: bool = False         # True: the authors' 1080p60 PNG rendering mode (D-5 spot checks)
    prefork: bool = False               # True: fork each child from a zygote with manim imported (§13.3)
    fast_paths: bool = True             # exact fast paths of manim helpers in the child (execute/fastpaths.py)
    save_images: bool = False           # AUDIT_SAVE_IMAGES; the pipeline runs with --no-images
    pictures: bool = False              # -ql frame + finding boxes per segment (prism-fast inspect); report unchanged
    pictures_root: str = ""             # batch: failing samples' pictures in <root>/<id>/ ("" = <audit dir>/pictures)
    geometry_backend: str = "auto"      # "auto" | "mpl_batched" | "numpy" | "torch" | "matplotlib" (per pair)
    geometry_device: str = "cpu"
    torch_min_tests: int = 2_000_000     # with a CUDA geometry_device: use torch above this many tests
    # "auto": the -ql render also yields the report where provably identical (audit/onepass.py); "off": the
    # audit always re-executes the script (two Manim executions per sample)
    one_pass: str = "auto"
    # the execution's sandbox level: "auto" (namespaces as root, bubblewrap without) | "unsafe" (explicit opt-in)
    sandbox: str = "auto"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "AuditConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise KeyError(f"unknown AuditConfig field(s) {unknown}")
        return cls(**data)
