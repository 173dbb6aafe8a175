"""Static extraction of on-screen text from a generated Manim script (spec text_expand.md §2–§4).

Pure functions over source text: no Manim, no I/O. Two modes:

* ``ast`` — a small abstract interpreter walks the module (§3): module-level statements bind constants, then the
  ``construct`` body of every top-level class is walked, calls to top-level functions and ``self`` methods are
  simulated, and text-producing calls (§2) contribute their constant-evaluated arguments.
* ``fallback_scan`` — used only when parsing raises ``SyntaxError`` (§4): a line-based tolerant environment plus a
  regex scan for text-producing calls with a quote-aware argument splitter.

Every quirk of the authors' toolkit (README §5.6, Q-TEXT-1…4, 6…8) is a switch of the ``Profile``; the branch
points cite the quirk id. Q-TEXT-5 (manifest format) lives in ``text_expand_run``.

Layout: this module chooses the mode; ``text_expand_walk`` is the ``ast`` mode, ``text_expand_scan`` the
``fallback_scan`` mode, ``text_expand_eval`` their shared core (argument tables, constant evaluator, work bounds).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from prism_fast.metrics.text_expand_scan import FallbackScanner
from prism_fast.metrics.text_expand_walk import StaticTextWalker
from prism_fast.profile import REFERENCE, Profile

MODE_AST = "ast"
MODE_FALLBACK = "fallback_scan"


# --------------------------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Extraction:
    """Extracted display segments, the mode used, and (fallback only) the SyntaxError that forced it."""

    segments: list[str]
    mode: str
    fallback_reason: str | None = None


def extract_display_text(code: str, profile: Profile = REFERENCE) -> Extraction:
    """Extract the on-screen text segments of ``code`` (§3, or §4 when the code raises SyntaxError).

    Exceptions other than SyntaxError propagate (the caller turns them into ``parse_fail``).
    """
    try:
        tree = ast.parse(code)
        return Extraction(StaticTextWalker(tree, profile).extract(), MODE_AST)
    except SyntaxError as exc:
        reason = f"{type(exc).__name__}: {exc}"
        return Extraction(FallbackScanner(profile).extract(code), MODE_FALLBACK, reason)
