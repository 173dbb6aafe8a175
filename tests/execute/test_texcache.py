"""The shared TeX SVG cache (prism_fast/execute/texcache.py): real prefork renders, real latex + dvisvgm."""

from __future__ import annotations

import hashlib
import os
import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from prism_fast.execute import texcache
from prism_fast.execute.render import RenderConfig, render_one

MATH = textwrap.dedent('''
    from manim import *

    class Eq(Scene):
        def construct(self):
            eq = MathTex(r"E = mc^2", r"\\int_0^1 x\\,dx").to_edge(UP)
            t = Tex(r"a $\\sqrt{2}$ b")
            self.play(Write(eq), FadeIn(t), run_time=0.4)
    ''')


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "svg").rglob("*.svg"))


def test_compile_commands_are_manims(tmp_path):
    from manim.utils.tex_file_writing import make_tex_compilation_command

    tex = tmp_path / "0123456789abcdef.tex"
    for compiler, fmt in (("latex", ".dvi"), ("pdflatex", ".pdf"), ("lualatex", ".pdf"), ("xelatex", ".xdv"),
                          ("xelatex", ".pdf")):
        first, second = texcache.compile_commands(tex, compiler, fmt)
        assert first == make_tex_compilation_command(compiler, fmt, tex, tmp_path)
        assert second[0] == "dvisvgm" and second[-1] == tex.with_suffix(fmt).as_posix()
        assert ("--pdf" in second) == (fmt == ".pdf")


def test_cached_renders_are_identical_to_uncached(worker_cfg):
    """First sighting → marker only; second → trusted re-compile publishes; third → served from the cache. Every
    video is byte-identical to a render without the cache, and so are the sizes of stdout/stderr."""
    root, cfg, worker = worker_cfg
    rows = [render_one("eq", MATH, root / f"out{k}", cfg, runner=worker.run) for k in range(3)]
    plain = render_one("eq", MATH, root / "plain", replace(cfg, tex_cache_dir=None), runner=worker.run)
    assert plain["success"] and plain["tex_cache"] == "off"
    for row in rows:
        assert row["success"], row["error"]
        assert row["tex_cache"] == "on"
        assert _sha(row["video_path"]) == _sha(plain["video_path"])
        assert (row["stdout_bytes"], row["stderr_bytes"]) == (plain["stdout_bytes"], plain["stderr_bytes"])
    first, second, third = rows
    assert first["tex_cache_hits"] == 0 and first["tex_cache_published"] == 0
    # every distinct compile of the scene (at least the MathTex and the Tex) is published once, then served
    assert second["tex_cache_hits"] == 0 and second["tex_cache_published"] >= 2
    assert third["tex_cache_hits"] == second["tex_cache_published"] and third["tex_cache_published"] == 0
    assert len(_entries(Path(cfg.tex_cache_dir))) == second["tex_cache_published"]


def test_cli_backend_says_unsupported(worker_cfg, tmp_path):
    _root, cfg, _worker = worker_cfg
    row = render_one("nope", "from manim import *\nclass A(Scene):\n    def construct(self):\n        pass\n",
                     tmp_path, cfg)
    assert row["backend"] == "cli" and row["tex_cache"] == "unsupported_backend"


def test_a_script_cannot_poison_the_cache(worker_cfg):
    """A hostile script plants a wrong SVG under the right manim name and logs a fake compile, twice (so the
    second time is verified). The trusted re-compile disagrees: nothing is published; the cache directory is
    read-only for the script; the cache's variables are not in its environment."""
    root, cfg, worker = worker_cfg
    cache = Path(cfg.tex_cache_dir)
    hostile = textwrap.dedent(f'''
        import os
        from pathlib import Path
        from manim import *
        from manim.utils.tex_file_writing import tex_hash

        class Evil(Scene):
            def construct(self):
                leaked = [k for k in os.environ if k.startswith("PRISM_FAST")]
                try:
                    Path({str(cache)!r}, "svg", "planted.svg").write_text("x")
                    wrote = True
                except OSError:
                    wrote = False
                code = config.tex_template.get_texcode_for_expression_in_env("y = 2", "align*")
                tex_dir = Path(config.media_dir) / "Tex"
                tex_dir.mkdir(parents=True, exist_ok=True)
                name = tex_hash(code)
                (tex_dir / (name + ".tex")).write_text(code)
                (tex_dir / (name + ".svg")).write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
                with open({texcache.LOG_NAME!r}, "a") as f:
                    f.write('{{"event": "miss", "tex": "' + name + '.tex", "compiler": "latex", "format": ".dvi"}}\\n')
                    f.write('{{"event": "miss", "tex": "../../etc/passwd", "compiler": "latex", "format": ".dvi"}}\\n')
                raise SystemExit(40 + 2 * bool(leaked) + bool(wrote))
        ''')
    before = _entries(cache)
    rows = [render_one("evil", hostile, root / f"evil{k}", cfg, runner=worker.run) for k in range(2)]
    for row in rows:
        assert row["exit_status"] == 40 if row["fs_readonly"] else row["exit_status"] in (40, 41), row["error"]
        assert row["tex_cache_published"] == 0
    assert _entries(cache) == before
    assert not (cache / "svg" / "planted.svg").exists()


def test_profile_render_keeps_the_cache_off_unless_asked(tmp_path):
    from prism_fast.execute.profiling import ProfileSettings, profile_renders

    cfg = RenderConfig(timeout_s=300, tmp_root=str(tmp_path / "tmp"), tex_cache_dir=str(tmp_path / "cache"))
    script = "from manim import *\nclass A(Scene):\n    def construct(self):\n        self.play(FadeIn(MathTex('q')), run_time=0.2)\n"
    out = profile_renders([("m", "a", script)], cfg, ProfileSettings(repeats=1, warmup=0))
    assert out["method"]["tex_cache"] == "off" and out["method"]["backend"] == "cli"
    assert not (tmp_path / "cache").exists()
    out = profile_renders([("m", "a", script)], cfg, ProfileSettings(repeats=1, warmup=2, tex_cache=True))
    assert out["method"]["tex_cache"] == "warm" and out["samples"][0]["failures"] == 0
    assert len(_entries(tmp_path / "cache")) == 1
    json.dumps(out)


SVG_TEMPLATE = """<?xml version='1.0' encoding='UTF-8'?>
<svg version='1.1' xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='20pt' height='10pt' viewBox='0 -10 20 10'>
<defs>
{defs}
</defs>
<g id='page1'>
<use x='1' y='-2' xlink:href='#g1-1'/>
<use x='9' y='-2' xlink:href='#g2-7'/>
</g>
</svg>
"""
GLYPH_A = "<path id='g1-1' d='M0 0L4 0L4-6L0-6Z'/>"
GLYPH_B = "<path id='g2-7' d='M0 0L3-6L6 0Z'/>"


def test_glyph_definition_order_is_not_part_of_the_comparison_nor_of_the_mobject(tmp_path):
    """dvisvgm varies the order of <defs> between runs; the canonical form ignores exactly that, and manim's
    parsed mobject does not depend on it. Any other byte difference still counts."""
    from manim import SVGMobject

    ab = SVG_TEMPLATE.format(defs=f"{GLYPH_A}\n{GLYPH_B}").encode()
    ba = SVG_TEMPLATE.format(defs=f"{GLYPH_B}\n{GLYPH_A}").encode()
    assert ab != ba and texcache.canonical_svg(ab) == texcache.canonical_svg(ba)
    changed = ba.replace(b"L3-6", b"L3-5")
    assert texcache.canonical_svg(changed) != texcache.canonical_svg(ab)
    moved = ab.replace(b"x='9'", b"x='8'")
    assert texcache.canonical_svg(moved) != texcache.canonical_svg(ab)
    points = []
    for k, data in enumerate((ab, ba)):
        path = tmp_path / f"g{k}.svg"
        path.write_bytes(data)
        mob = SVGMobject(str(path))
        points.append([sm.points.tobytes() for sm in mob.family_members_with_points()])
    assert points[0] == points[1] and len(points[0]) == 2


def test_harvest_with_a_relative_cache_dir(tmp_path, monkeypatch):
    """runs_root is relative by default: the verifier runs in another cwd, so every path it uses must be
    absolute (a relative one produced no SVG at all in a pipeline run)."""
    import subprocess

    from manim import TexTemplate

    from prism_fast.execute import sandbox

    monkeypatch.chdir(tmp_path)
    code = TexTemplate().get_texcode_for_expression_in_env("y = x^2", "align*")
    work = tmp_path / "work"
    tex_dir = work / "media" / "Tex"
    tex_dir.mkdir(parents=True)
    tex = tex_dir / f"{texcache.manim_tex_hash(code)}.tex"
    tex.write_text(code, encoding="utf-8")
    for cmd in texcache.compile_commands(tex, "latex", ".dvi"):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    (work / texcache.LOG_NAME).write_text(json.dumps({"event": "miss", "tex": tex.name, "compiler": "latex",
                                                      "format": ".dvi"}) + "\n", encoding="utf-8")

    def make_spec(argv, cwd):
        return sandbox.SandboxSpec(argv=argv, cwd=cwd, env=sandbox.scrub_env(os.environ, home=cwd), timeout_s=120)

    rel = Path("runs") / ".cache" / "tex"
    first = texcache.harvest(work, work / "media", rel, sandbox.run_sandboxed, make_spec)
    second = texcache.harvest(work, work / "media", rel, sandbox.run_sandboxed, make_spec)
    assert (first.first_seen, first.published) == (1, 0)
    assert (second.published, second.rejected) == (1, 0), second.notes
    assert len(_entries(tmp_path / rel)) == 1


def test_render_cache_never_stores_private_fields(tmp_path):
    """A caller's private field (e.g. ``_onepass_audit``, popped by the caller) must not be written into a
    render cache entry, or a later hit would carry it into the exec rows."""
    from prism_fast.execute.cache import RenderCache

    cache = RenderCache(tmp_path)
    row = {"id": "a", "success": False, "error_kind": "exit_nonzero", "_onepass_audit": {"report": {}}}
    assert cache.put("ab" * 32, row)
    hit = cache.get("ab" * 32, tmp_path / "a.mp4")
    assert hit is not None and "_onepass_audit" not in hit and hit["cache_hit"] is True
