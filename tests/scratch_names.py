"""Rows' texts with a scratch directory's random name set aside, wherever the console wrapped it.

A sample's scratch directory is ``tempfile.mkdtemp(prefix=...)``: the prefix and 8 random characters. Error texts
(rich tracebacks, manim's LaTeX errors) wrap long paths at the console width, so where the random characters fall
depends on the length of the test run's temp root (``pytest-N``, ``popen-gwK`` under xdist). Two rows compared with
:func:`scratch_neutral` differ only where they differ beyond those 8 characters; line breaks, box characters and
spaces are kept as they are.
"""

from __future__ import annotations

import re

_WRAP = r"(?:[ │]*\n[ │]*)?"  # a line break the console put inside a path, with the box and indent around it
_RANDOM = "abcdefghijklmnopqrstuvwxyz0123456789_"  # tempfile's alphabet


def scratch_neutral(text, prefix: str):
    """``text`` with the 8 random characters after every ``prefix`` (wrapped or not) replaced by ``X``."""
    if not isinstance(text, str):
        return text
    pattern = "".join(re.escape(c) + _WRAP for c in prefix) + _WRAP.join([f"[{_RANDOM}]"] * 8)

    def mask(match: re.Match) -> str:
        chars, left = list(match.group(0)), 8
        for i in range(len(chars) - 1, -1, -1):
            if left and chars[i] in _RANDOM:
                chars[i], left = "X", left - 1
        return "".join(chars)

    return re.sub(pattern, mask, text)
