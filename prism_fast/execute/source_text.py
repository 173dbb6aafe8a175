"""The script's text as Python reads it (PEP 263): used by every static reading of a script that must see what
Python runs -- the one-pass rule (audit/onepass_rule.py) and the fast paths' decline (execute/fastpaths.py)."""

from __future__ import annotations

import re

# PEP 263: a coding declaration in the first two lines makes Python decode the file with that codec, while this rule
# (and every other reading of the script's text) sees the text as UTF-8: a `# coding: utf-7` script can hide code
# in a comment (red team). Only UTF-8 declarations are read as what they are.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8_NAMES = ("utf-8", "utf8", "utf_8", "u8", "utf", "cp65001")


def source_encoding_reason(source: str) -> str | None:
    """``source_encoding:<name>`` when a PEP 263 declaration names anything but UTF-8, else None: by Python's own
    reading of the bytes written for the script (``tokenize.detect_encoding``), and by the first two lines split as
    Python splits them (only ``\n``, ``\r``: ``str.splitlines`` also splits on ``\x1c`` and others, which hid a
    declaration on the real second line from the first version of this check -- red team 3)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source.encode("utf-8", "surrogatepass")).readline)
    except (SyntaxError, LookupError, UnicodeError) as exc:
        return f"source_encoding:{type(exc).__name__}"
    if encoding not in ("utf-8", "utf-8-sig"):
        return f"source_encoding:{encoding}"
    for line in re.split(r"\r\n|\r|\n", source)[:2]:
        m = _CODING.match(line)
        if m:
            name = m.group(1).lower().replace("_", "-")
            return None if name in _UTF8_NAMES or name.startswith("utf-8-") else f"source_encoding:{m.group(1)}"
        if line.strip() and not line.lstrip().startswith("#"):
            break  # a declaration counts only on the first or second line, after comments only
    return None
