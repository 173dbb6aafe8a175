"""LaTeX format benchmark (issue #19 item 6, execute/texformat.py): the same renders and separate audits with the
format off and on, one at a time, side by side.

    .venv/bin/python -m bench.tex_format_bench [--scripts DIR] [--limit N] [--audit-ids ID,ID,...] [--json out.json]

Renders: every ``<id>.py`` of ``--scripts`` (default: the bundled reference answers, EN then ZH), ``--limit`` of
them, each rendered with the format off and then on (interleaved), through one prefork worker per side with the
TeX cache on (each side its own fresh cache, so both see the same first/second/third sightings); CPU = the render
child's user+sys. Separate audits (``--audit-ids``, scripts of ``--scripts``): ``audit_one`` with the prefork audit
worker and a TeX cache, off and on interleaved as well, wall time per audit (the first "on" audit includes building
the format). Every video and every audit report must be byte-identical between
the sides (a PROBLEM line and exit status 1 otherwise). Benchmark, not a test: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit.config import AuditConfig  # noqa: E402
from prism_fast.audit.runner import audit_one  # noqa: E402
from prism_fast.execute.render import RenderConfig, prefork_worker, render_one  # noqa: E402


def _sha(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).exists() else None


def renders(scripts: list[Path]) -> dict:
    """Each script with the format off, then on (interleaved, so that neither side pays the cold caches alone);
    one prefork worker and one fresh TeX cache per side."""
    root = Path(tempfile.mkdtemp(prefix="texfmt_bench_"))
    sides = {}
    for name, on in (("off", False), ("on", True)):
        cfg = RenderConfig(timeout_s=600, tmp_root=str(root / name / "tmp"), tex_cache_dir=str(root / name / "cache"),
                           tex_format=on)
        sides[name] = (cfg, prefork_worker(cfg), {})
    try:
        for path in scripts:
            for name, (cfg, worker, out) in sides.items():
                row = render_one(path.stem, path.read_text(encoding="utf-8"), root / name / "out", cfg,
                                 runner=worker.run)
                out[path.stem] = {"cpu_s": row["cpu_s"], "success": row["success"],
                                  "video": _sha(row["video_path"]), "tex_format": row["tex_format"],
                                  "format_compiles": row["tex_format_compiles"]}
    finally:
        for _cfg, worker, _out in sides.values():
            worker.close()
    return {name: out for name, (_c, _w, out) in sides.items()}


def audits(scripts: list[Path]) -> dict:
    """Each script audited with the format off, then on (interleaved); each side its own fresh TeX cache."""
    root = Path(tempfile.mkdtemp(prefix="texfmt_audit_"))
    cfg = AuditConfig(prefork=True)
    sides: dict = {"off": {}, "on": {}}
    for path in scripts:
        for name, out in sides.items():
            t0 = time.perf_counter()
            row = audit_one(path.stem, path.read_text(encoding="utf-8"), root / name / "w", cfg,
                            tex_cache_dir=str(root / name / "cache"), tex_format=name == "on")
            out[path.stem] = {"wall_s": time.perf_counter() - t0, "pass": row.get("visual_structure_pass"),
                              "report": _sha(root / name / "w" / "audits" / path.stem / "audit_report.json"),
                              "tex_format": row.get("tex_format"), "format_compiles": row.get("tex_format_compiles")}
    return sides


def _compare(what: str, sides: dict, same: tuple[str, str], measure: str, unit: str, problems: list) -> None:
    """Print one side-by-side line; every output named in ``same`` must be equal between the sides."""
    off, on = sides["off"], sides["on"]
    problems.extend(f"{what} {k}: {' or '.join(same)} differs" for k in off
                    if tuple(off[k][f] for f in same) != tuple(on[k][f] for f in same))
    t_off, t_on = (sum(v[measure] for v in side.values()) for side in (off, on))
    n_fmt = sum(v["format_compiles"] or 0 for v in on.values())
    print(f"{what}: {len(off)} scripts, format off {t_off:.1f} {unit}, on {t_on:.1f} {unit} "
          f"({n_fmt} compiles from the format): on/off = {t_on / t_off:.3f}")


def _bundled() -> list[Path]:
    base = ROOT / "prism_fast" / "dataset" / "data" / "samples"
    return sorted((base / "en").glob("*.py")) + sorted((base / "zh").glob("*.py"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scripts", default=None, help="directory of <id>.py (default: the bundled reference answers)")
    ap.add_argument("--limit", type=int, default=None, help="render the first N scripts (0: none)")
    ap.add_argument("--audit-ids", default="", help="comma-separated ids of --scripts to audit separately")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    scripts = sorted(Path(args.scripts).glob("*.py")) if args.scripts else _bundled()
    scripts = scripts[:args.limit] if args.limit is not None else scripts  # --limit 0: audits only
    by_id = {p.stem: p for p in (sorted(Path(args.scripts).glob("*.py")) if args.scripts else _bundled())}
    audit_scripts = [by_id[i] for i in args.audit_ids.split(",") if i]
    problems, result = [], {"renders": {}, "audits": {}}
    if scripts:
        result["renders"] = renders(scripts)
        _compare("renders", result["renders"], ("video", "success"), "cpu_s", "CPU-s", problems)
    if audit_scripts:
        result["audits"] = audits(audit_scripts)
        _compare("separate audits (the first 'on' one builds the format)", result["audits"], ("report", "pass"),
                 "wall_s", "s", problems)
    for p in problems:
        print("PROBLEM:", p)
    if not problems:
        print("every video and report identical between the sides")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
