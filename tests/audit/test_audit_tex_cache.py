"""A separate audit reading the render's verified TeX cache and LaTeX format (audit/runner.py ``tex_cache_env``):
the report and the row's audit fields are those of an audit without them; the format is really used; the script
sees neither the cache's variables nor a writable cache."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.runner import audit_one

# an always_redraw scene (such scripts are audited separately): every audit frame typesets a new label
SCRIPT = textwrap.dedent('''
    import os
    from manim import *

    class Sweep(Scene):
        def construct(self):
            k = ValueTracker(1)
            label = always_redraw(lambda: MathTex(r"k = " + f"{k.get_value():.1f}").to_corner(UL))
            box = Square(side_length=2)
            eq = MathTex(r"\\\\int_0^k x\\\\,dx", r"= \\\\frac{k^2}{2}").next_to(box, DOWN)
            self.add(label, box, eq)
            leaked = [v for v in os.environ if "TEX_CACHE" in v or "TEX_LOG" in v or "TEX_FORMAT" in v]
            try:  # where the sandbox shows the cache (spelled so that the static tamper check does not fire)
                open("/" + "_".join(["prism", "fast", "tex", "cache"]) + "/planted", "w").write("x")
                wrote = True
            except OSError:
                wrote = False
            if leaked or wrote:
                raise SystemExit(40 + 2 * bool(leaked) + bool(wrote))
            self.play(k.animate.set_value(1.4), run_time=0.2)
            self.play(Write(MathTex(r"\\\\sqrt{2}").move_to(box)), run_time=0.2)
    ''')

# the same scene without what the TeX cache's gate refuses (execute/texcache.py "The gate": `os`, `open`): cache and
# format are used
CLEAN = "\n".join(line for line in SCRIPT.splitlines() if "import os" not in line)
CLEAN = CLEAN[:CLEAN.index("        leaked = ")] + CLEAN[CLEAN.index("        self.play(k.animate"):]

FIELDS = ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass", "visual_issue_total",
          "visual_issue_breakdown", "error_msg", "status", "scene_errors")


@pytest.mark.parametrize("prefork", [True, False])
def test_audit_with_the_tex_cache_and_format_equals_the_plain_audit(tmp_path, prefork):
    """With the cache and the format, and (script that imports ``os``: the gate declines both) without them."""
    cfg = AuditConfig(prefork=prefork)
    cache = str(tmp_path / "texcache")
    rows, reports = {}, {}
    for name, kwargs in (("plain", {}), ("cache", {"tex_cache_dir": cache, "tex_format": False}),
                         ("format", {"tex_cache_dir": cache, "tex_format": True})):
        row = audit_one("sweep", CLEAN, tmp_path / name, cfg, **kwargs)
        rows[name] = row
        reports[name] = (tmp_path / name / "audits" / "sweep" / "audit_report.json").read_bytes()
    # the script that could see the cache's variables and the cache (it exits 41-43 if it does): declined
    rows["declined"] = audit_one("sweep", SCRIPT, tmp_path / "declined", cfg, tex_cache_dir=cache, tex_format=True)
    reports["declined"] = (tmp_path / "declined" / "audits" / "sweep" / "audit_report.json").read_bytes()
    assert rows["plain"]["audit_success"] == 1 and rows["plain"]["segment_count"] >= 1, rows["plain"]
    for name in ("cache", "format", "declined"):
        assert reports[name] == reports["plain"], name
        assert {f: rows[name].get(f) for f in FIELDS} == {f: rows["plain"].get(f) for f in FIELDS}, name
    assert (rows["plain"]["tex_format"], rows["cache"]["tex_format"], rows["format"]["tex_format"],
            rows["declined"]["tex_format"]) == ("off", "off", "on", "declined")
    assert "import:os" in rows["declined"]["tex_cache_reasons"] and rows["format"]["tex_cache_reasons"] is None
    assert rows["cache"]["tex_format_compiles"] == 0
    # the three static MathTex and a label per audit frame with a new value
    assert rows["format"]["tex_format_compiles"] >= 5, rows["format"]["tex_format_compiles"]
    # the script saw neither the cache's variables nor a writable cache (it exits 41-43 if it did)
    assert all(r["returncode"] == 0 for r in rows.values()), {n: r["returncode"] for n, r in rows.items()}
    assert not list(Path(cache).rglob("planted"))
