"""Spatial-audit benchmark: our fast path vs the authors' rendering mode, same scripts, one run each.

Baseline ("reference mode", spec spatial_audit.md §5.1): the child with ``full_fidelity=True`` (1080p60
Cairo raster of every frame, every frame PNG-encoded, every play hashed, a frame copy per snapshot) and the
``matplotlib`` geometry backend (one ``Path.contains_points`` call per ordered pair, as the toolkit does).
Ours: the fast path (no raster/PNG/hash, per-frame updates kept) with the batched geometry engine, as a
fresh ``python -m`` child ("ours") and forked from a zygote with manim imported ("ours_prefork").
Every mode writes a report per script; the benchmark checks they are byte-identical.

    .venv/bin/python bench/audit_bench.py [scripts.py ...] [--out bench_audit.json] [--skip-baseline]

Also times the geometry engine alone on the 288-atom grid snapshot (every back-end, cascade included).
Renders run one at a time.
"""

from __future__ import annotations

import argparse
import gzip
import json
import pickle
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit import AuditConfig, audit_file  # noqa: E402
from prism_fast.audit.cascade import Atom, check_snapshot  # noqa: E402
from prism_fast.profile import REFERENCE  # noqa: E402

FIX = ROOT / "tests" / "audit" / "fixtures"
DEFAULT = [FIX / f"{n}.py" for n in ("t_geom", "traced", "heavy", "grid")]


def geometry_bench(repeats: int = 3) -> dict:
    with gzip.open(FIX / "atoms" / "grid.Grid.Step_1.pkl.gz", "rb") as fh:
        atoms = [Atom(**{**r, "children_xy": tuple(r["children_xy"])}) for r in pickle.load(fh)]
    out = {"atoms": len(atoms)}
    for backend in ("mpl_batched", "numpy", "torch", "matplotlib"):
        cfg = AuditConfig(geometry_backend=backend)
        check_snapshot(atoms, cfg, 64 / 9, 4.0)  # warm-up (imports)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            check_snapshot(atoms, cfg, 64 / 9, 4.0)
            times.append(time.perf_counter() - t0)
        out[backend] = round(min(times), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scripts", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--skip-baseline", action="store_true", help="only our modes (fast, fast+prefork)")
    args = ap.parse_args()
    modes = [("ours", AuditConfig()), ("ours_prefork", AuditConfig(prefork=True))]
    if not args.skip_baseline:
        modes.append(("baseline", AuditConfig(full_fidelity=True, geometry_backend="matplotlib")))
    scripts = args.scripts or DEFAULT
    results = []
    with tempfile.TemporaryDirectory(prefix="audit_bench_") as tmp:
        for script in scripts:
            row = {"script": script.name}
            reports = {}
            for mode, cfg in modes:
                work = Path(tmp) / mode
                r = audit_file(script, work, cfg, REFERENCE)
                reports[mode] = (work / "audits" / script.stem / "audit_report.json").read_bytes()
                row[f"{mode}_sec"] = round(r["runtime_sec"], 2)
                row[f"{mode}_status"] = r["status"]
            row["identical"] = len(set(reports.values())) == 1
            if "baseline" in reports:
                row["speedup"] = round(row["baseline_sec"] / max(row["ours_sec"], 1e-9), 2)
            results.append(row)
            print(json.dumps(row), flush=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": platform.python_version(),
           "machine": platform.machine(), "scripts": results, "geometry_grid_snapshot_sec": geometry_bench()}
    print(json.dumps(doc["geometry_grid_snapshot_sec"]))
    if args.out:
        args.out.write_text(json.dumps(doc, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
