"""dvisvgm without PostScript specials (execute/texsvg.py): the same SVG bytes for the DVIs it accepts, and no
acceptance of a DVI whose specials could draw. Real latex and dvisvgm runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from prism_fast.execute import texcache, texsvg

# what the TeX cache takes (texcache.cacheable): maths of every kind, text, environments, sizes, digits
CACHEABLE = [
    ("\\int_0^1 x^2\\,dx = \\frac{1}{3}", "align*"),
    ("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", "align*"),
    ("\\sum_{k=1}^{n} \\binom{n}{k} = 2^n \\quad \\lim_{x\\to\\infty} e^{-x}", "align*"),
    ("\\underbrace{a+b}_{c} \\overrightarrow{AB} \\mathbb{R} \\mathcal{F} \\boxed{z}", "align*"),
    ("-1{,}234.5", "align*"),
    ("f(x) = \\begin{cases} 1 & x > 0 \\\\ 0 & \\text{otherwise} \\end{cases}", "align*"),
    ("Hello, \\textbf{bold} and \\emph{it}, {\\Large big} \\S 3", "center"),
]
# specials that draw or colour (manim's default template loads no colour or graphics package: a raw \\special is
# the way in, which the TeX cache never takes -- texcache.cacheable -- but the guard does not rely on that)
DRAWING = [
    ("\\special{color push rgb 1 0 0}x\\special{color pop} + y", "align*"),
    ("A\\special{ps: newpath 0 0 moveto 20 20 lineto stroke}", "center"),
    ("A\\special{dvisvgm:raw <circle cx='0' cy='0' r='5'/>}", "center"),
]


def _dvi(tmp: Path, expression: str, environment: str) -> Path:
    from manim import TexTemplate

    tex = tmp / "e.tex"
    tex.write_text(TexTemplate().get_texcode_for_expression_in_env(expression, environment), encoding="utf-8")
    subprocess.run(["latex", "-interaction=batchmode", "-halt-on-error", f"-output-directory={tmp}", str(tex)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return tex.with_suffix(".dvi")


def _svg(dvi: Path, name: str, fast: bool) -> bytes:
    out = dvi.with_name(name)
    subprocess.run(texsvg.command(dvi, out, fast), stdout=subprocess.DEVNULL, check=True)
    return out.read_bytes()


@pytest.mark.parametrize("k", range(len(CACHEABLE)))
def test_the_template_s_specials_never_change_the_svg(tmp_path, k):
    expression, environment = CACHEABLE[k]
    dvi = _dvi(tmp_path, expression, environment)
    assert texcache.cacheable(dvi.with_suffix(".tex").read_bytes())
    assert texsvg.qualifies(dvi)
    # equal up to the order of the glyph definitions, which dvisvgm varies from run to run with or without specials
    # (the TeX cache's own criterion, texformat.canonical_svg; manim's parse follows the <use> elements)
    full = texcache.canonical_svg(_svg(dvi, "full.svg", False))
    assert texcache.canonical_svg(_svg(dvi, "fast.svg", True)) == full
    assert texsvg.fast_svg(dvi) and texcache.canonical_svg(dvi.with_suffix(".svg").read_bytes()) == full


@pytest.mark.parametrize("k", range(len(DRAWING)))
def test_a_dvi_whose_specials_draw_is_converted_with_them(tmp_path, k):
    expression, environment = DRAWING[k]
    dvi = _dvi(tmp_path, expression, environment)
    specials = texsvg.dvi_specials(dvi.read_bytes())
    assert specials is not None and not texsvg.qualifies(dvi)
    assert not texcache.cacheable(dvi.with_suffix(".tex").read_bytes())
    assert not texsvg.fast_svg(dvi) and not dvi.with_suffix(".svg").exists()  # nothing left: manim converts
    fast, full = _svg(dvi, "fast.svg", True), _svg(dvi, "full.svg", False)
    assert texcache.canonical_svg(fast) != texcache.canonical_svg(full)  # the guard is needed


def test_the_parser_refuses_what_it_does_not_fully_read(tmp_path):
    dvi = _dvi(tmp_path, "x^2", "align*")
    data = dvi.read_bytes()
    assert texsvg.dvi_specials(data) is not None
    assert texsvg.dvi_specials(data[: len(data) // 2]) is None  # truncated: no postamble
    assert texsvg.dvi_specials(data[:1] + bytes([7]) + data[2:]) is None  # XeTeX's XDV id byte
    assert texsvg.dvi_specials(b"") is None and texsvg.dvi_specials(b"\xf7\x02" + b"\x00" * 20) is None
    # an undefined opcode after the preamble
    k = data[14]
    assert texsvg.dvi_specials(data[: 15 + k] + bytes([251]) + data[15 + k:]) is None
    # bytes spliced in after the preamble move every page: the pointers no longer agree, refused
    extra = b"ps:: 0 0 moveto"
    spliced = data[: 15 + k] + bytes([239, len(extra)]) + extra + data[15 + k:]
    assert texsvg.dvi_specials(spliced) is None
    (tmp_path / "spliced.dvi").write_bytes(spliced)
    assert not texsvg.qualifies(tmp_path / "spliced.dvi")


def test_a_dvi_whose_pointers_disagree_with_its_pages_is_refused(tmp_path):
    """Red team 2026-12-05: dvisvgm finds the pages from the postamble (post_post -> post -> the last bop -> each
    bop's back pointer); a `post` byte spliced in after the preamble, every pointer shifted past it, showed a
    start-to-end reader no page at all while dvisvgm drew the page and its PostScript line."""
    import struct

    dvi = _dvi(tmp_path, "A\\special{ps: newpath 0 0 moveto 200 200 lineto 10 setlinewidth stroke}", "center")
    data = bytearray(dvi.read_bytes())
    assert not texsvg.qualifies(dvi)
    end = len(data) - 1
    while data[end] == 223:
        end -= 1
    post = struct.unpack(">i", data[end - 4:end])[0]
    bops, b = [], struct.unpack(">i", data[post + 1:post + 5])[0]
    while b != -1:
        bops.append(b)
        b = struct.unpack(">i", data[b + 41:b + 45])[0]
    at = 15 + data[14]
    crafted = data[:at] + b"\xf8" + data[at:]
    for field in [bb + 41 for bb in bops] + [post + 1, end - 4]:
        value = struct.unpack(">i", data[field:field + 4])[0]
        if value != -1:
            crafted[field + 1:field + 5] = struct.pack(">i", value + 1)
    (tmp_path / "crafted.dvi").write_bytes(bytes(crafted))
    assert texsvg.dvi_specials(bytes(crafted)) is None and not texsvg.qualifies(tmp_path / "crafted.dvi")
    # dvisvgm still draws the hidden line from it: the refusal matters
    full = _svg(tmp_path / "crafted.dvi", "full.svg", False)
    assert b"200" in full and texcache.canonical_svg(full) != texcache.canonical_svg(
        _svg(tmp_path / "crafted.dvi", "fast.svg", True))
    # a bop whose back pointer is wrong, and a postamble pointing elsewhere: refused too
    (tmp_path / "c").mkdir()
    clean = _dvi(tmp_path / "c", "x^2", "align*")
    raw = bytearray(clean.read_bytes())
    assert texsvg.dvi_specials(bytes(raw)) is not None
    bop = 15 + raw[14]
    while raw[bop] != 139:
        bop += 1
    bad = raw[:]
    bad[bop + 41:bop + 45] = struct.pack(">i", 5)
    assert texsvg.dvi_specials(bytes(bad)) is None
    tail = len(raw) - 1
    while raw[tail] == 223:
        tail -= 1
    bad = raw[:]
    bad[tail - 4:tail] = struct.pack(">i", 3)
    assert texsvg.dvi_specials(bytes(bad)) is None

