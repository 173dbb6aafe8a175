"""dvisvgm without its PostScript start-up, where the DVI's specials cannot draw (issue 19: TeX cost).

manim converts every compiled formula with ``dvisvgm --page=1 --no-fonts --verbosity=0``. On this corpus that is
about 75 ms a formula, two thirds of it Ghostscript starting up: every DVI of manim's default template carries the
``preview`` package's PostScript header code (``!…`` specials defining ``bop-hook``/``eop-hook``), l3backend's
``header=l3backend-dvips.pro`` and one ``ps::`` special of seven integers per page (the tight page's offsets), and
dvisvgm hands all of them to Ghostscript. None of them paints: the headers only define procedures and the page size
a PostScript printer would use, and the ``ps::`` numbers are the tight page's offsets, which dvisvgm reads only with
``--bbox=preview``; dvisvgm's SVG is made of the glyphs and rules it places itself, and its bounding box (``--bbox=min``,
the default) of what was painted. So for such a DVI, ``--no-specials`` gives the same SVG in a third of the time.

:func:`fast_svg` runs that only when **every** special of the DVI (:func:`dvi_specials`, a strict parser of the DVI
opcodes that also checks the page and postamble pointers dvisvgm follows: an XDV, an unknown opcode, a truncated
file or pointers that disagree with the pages qualify nothing) is one of :data:`NOOP_SPECIALS` or a
``ps::`` of integers only, and the conversion printed nothing; otherwise nothing is written and manim converts as
usual. Used by the TeX cache's wrapper (texcache.py) after it made the ``.dvi`` from the checked LaTeX format, so
only for sources the cache calls :func:`~prism_fast.execute.texcache.cacheable` (no colour, no box rotation, no
``\\special``: their DVI holds the template's specials only). Every SVG the cache publishes is compiled again by the
trusted parent with manim's own commands (specials on) and must match (texcache.harvest): the claim is checked on
every published formula of every run, and by tests/execute/test_texsvg.py on formulas of every kind the cache takes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from prism_fast.execute.texformat import compile_commands

# What manim's default template (texformat.DEFAULT_PREAMBLE) puts in every DVI: the preview package's PostScript
# header code (preview 12.x, `\documentclass[preview]{standalone}`) and l3backend's header file. Exact bytes: any
# other text (another preview version, a colour, a rotation, a user's \special) keeps the full conversion.
NOOP_SPECIALS = frozenset({
    b"!/preview@version(12.2)def",
    b"!userdict begin/preview-bop-level 0 def/bop-hook{/preview-bop-level dup load dup 0 le{/isls false def/vsize "
    b"792 def/hsize 612 def}if 1 add store}bind def/eop-hook{/preview-bop-level dup load dup 0 gt{1 sub}if store}"
    b"bind def end",
    b"!/preview@tightpage true def (compatibility PostScript comment for dvipng<=1.5 ",
    b"!userdict begin/bop-hook{7{currentfile token not{stop}if 65781.76 div DVImag mul}repeat 72 add 72 2 copy "
    b"gt{exch}if 4 2 roll neg 2 copy lt{exch}if dup 0 gt{pop 0 exch}{exch dup 0 lt{pop 0}if}ifelse 720 add exch "
    b"720 add 3 1 roll 4{5 -1 roll add 4 1 roll}repeat <</PageSize[5 -1 roll 6 index sub 5 -1 roll 5 index sub]"
    b"/PageOffset[7 -2 roll [1 1 dtransform exch]{0 ge{neg}if exch}forall]>>setpagedevice//bop-hook exec}bind "
    b"def end",
    b"!userdict (some extra code to avoid dvipng>=1.6 unknown special: 7{currentfile token not{stop}if 65781.76 "
    b"div })) pop",
    b"!userdict begin/bop-hook{preview-bop-level 0 le{7{currentfile token not{stop}if 65781.76 div DVImag mul}"
    b"repeat 72 add 72 2 copy gt{exch}if 4 2 roll neg 2 copy lt{exch}if dup 0 gt{pop 0 exch}{exch dup 0 lt{pop 0}"
    b"if}ifelse 720 add exch 720 add 3 1 roll 4{5 -1 roll add 4 1 roll}repeat <</PageSize[5 -1 roll 6 index sub 5 "
    b"-1 roll 5 index sub]/PageOffset[7 -2 roll [1 1 dtransform exch]{0 ge{neg}if exch}forall]>>setpagedevice}if"
    b"//bop-hook exec}bind def end",
    b"header=l3backend-dvips.pro",
})
_TIGHTPAGE = re.compile(rb"^ps::-?\d+(?: -?\d+){6}$")  # preview's per-page offsets: numbers, no operator
MAX_DVI_BYTES = 4 * 1024 * 1024
DVI_ID = 2  # the DVI format's id byte (XeTeX's XDV has another)

# opcode -> number of parameter bytes, for the opcodes whose parameters are fixed-size
_FIXED = {132: 8, 137: 8, 138: 0, 139: 44, 140: 0, 141: 0, 142: 0, 147: 0, 152: 0, 161: 0, 166: 0}
for _base, _first in ((128, 1), (133, 1), (143, 1), (148, 1), (153, 1), (157, 1), (162, 1), (167, 1), (235, 1)):
    for _i in range(4):
        _FIXED[_base + _i] = _first + _i  # set1-4, put1-4, right1-4, w1-4, x1-4, down1-4, y1-4, z1-4, fnt1-4


def _int32(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos:pos + 4], "big", signed=True)


def dvi_specials(data: bytes) -> list[bytes] | None:
    """Every ``xxx`` special of a DVI file, in order; None for anything this parser does not fully understand
    (not a DVI, an XDV, an undefined opcode, a truncated file), and for a file whose postamble and page pointers
    disagree with its sequence of pages: dvisvgm finds the pages from the end of the file (``post_post`` →
    ``post`` → the last ``bop`` → each ``bop``'s pointer to the one before), this parser reads from the start, so
    both must see the same pages (red team 2026-12-05: a ``post`` byte spliced in after the preamble, the
    pointers shifted past it, hid a drawing special from a start-to-end reader)."""
    n = len(data)
    if n < 15 or data[0] != 247 or data[1] != DVI_ID:
        return None
    pos = 15 + data[14]  # pre: i[1] num[4] den[4] mag[4] k[1] x[k]
    specials: list[bytes] = []
    last_bop = -1
    while pos < n:
        start = pos
        op = data[pos]
        pos += 1
        if op < 128 or 171 <= op <= 234:  # set_char_i, fnt_num_i
            continue
        if op == 139:  # bop: c0..c9[40] p[4], p the previous bop's offset (-1 for the first)
            if pos + 44 > n or _int32(data, pos + 40) != last_bop:
                return None
            last_bop = start
            pos += 44
        elif op in _FIXED:
            pos += _FIXED[op]
        elif 239 <= op <= 242:  # xxx1-4: k[1-4] then k bytes
            size = op - 238
            if pos + size > n:
                return None
            k = int.from_bytes(data[pos:pos + size], "big")
            pos += size
            if pos + k > n:
                return None
            specials.append(data[pos:pos + k])
            pos += k
        elif 243 <= op <= 246:  # fnt_def1-4: k[1-4] c[4] s[4] d[4] a[1] l[1] n[a+l]
            pos += op - 242 + 12
            if pos + 2 > n:
                return None
            pos += 2 + data[pos] + data[pos + 1]
        elif op == 248:  # post: no page content after it, only the postamble as dvisvgm reads it
            return specials if last_bop >= 0 and _postamble_ok(data, start, last_bop) else None
        else:  # pre again, post_post, or an opcode DVI does not define (XDV's 251-254, ...)
            return None
    return None  # no postamble: a truncated file


def _postamble_ok(data: bytes, post: int, last_bop: int) -> bool:
    """``post`` p[4] num[4] den[4] mag[4] l[4] u[4] s[2] t[2], font definitions (or nops), ``post_post`` q[4] i[1]
    and four or more 223 bytes to the end; p the last page's ``bop``, q this ``post``, i the DVI id."""
    n = len(data)
    if post + 29 > n or _int32(data, post + 1) != last_bop:
        return False
    pos = post + 29
    while pos < n and data[pos] != 249:
        op = data[pos]
        if op == 138:  # nop
            pos += 1
        elif 243 <= op <= 246:
            pos += 1 + op - 242 + 12
            if pos + 2 > n:
                return False
            pos += 2 + data[pos] + data[pos + 1]
        else:
            return False
    if pos + 6 > n or _int32(data, pos + 1) != post or data[pos + 5] != DVI_ID:
        return False
    tail = data[pos + 6:]
    return len(tail) >= 4 and tail == bytes([223]) * len(tail)


def qualifies(dvi_file: Path) -> bool:
    """Whether ``dvi_file``'s specials are all ones that cannot draw (module docstring)."""
    try:
        with open(dvi_file, "rb") as fh:
            data = fh.read(MAX_DVI_BYTES + 1)
    except OSError:
        return False
    if len(data) > MAX_DVI_BYTES:
        return False
    specials = dvi_specials(data)
    return specials is not None and all(s in NOOP_SPECIALS or _TIGHTPAGE.match(s) for s in specials)


def command(dvi_file: Path, svg_file: Path, fast: bool) -> list[str]:
    """manim 0.19's ``convert_to_svg`` command for a ``.dvi`` (texformat.compile_commands, the one copy of it),
    writing ``svg_file``; ``--no-specials`` added with ``fast``."""
    cmd = compile_commands(dvi_file.with_suffix(".tex"), "latex", ".dvi")[1]
    cmd = [f"--output={svg_file.as_posix()}" if c.startswith("--output=") else c for c in cmd]
    return cmd[:-2] + (["--no-specials"] if fast else []) + cmd[-2:]


def fast_svg(dvi_file: Path) -> bool:
    """Make ``<dvi>.svg`` next to ``dvi_file`` with ``--no-specials`` when the DVI qualifies; True when made. On
    any doubt (a special outside the list, a failed or talkative conversion) nothing is left behind and manim's own
    conversion runs."""
    svg_file = dvi_file.with_suffix(".svg")
    if svg_file.exists() or not qualifies(dvi_file):
        return False
    try:
        cp = subprocess.run(command(dvi_file, svg_file, True), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
        ok = cp.returncode == 0 and not cp.stderr and svg_file.exists()
    except OSError:
        ok = False
    if not ok:
        try:
            os.unlink(svg_file)
        except OSError:
            pass
    return ok
