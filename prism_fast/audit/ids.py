"""Atom id helpers (spec spatial_audit.md §7.3).

Pure string functions. In ``reference`` they cut at the *first* ``#`` of the whole id (Q-SPATIAL-14), so
``parent_id("grid#1/Square#2") == ""``; with ``per_component=True`` (the improved switch) the ``#k`` suffix is
stripped from each path component instead.
"""

from __future__ import annotations

import re

_SUFFIX = re.compile(r"#\d+$")


def _strip_suffixes(full_id: str) -> str:
    return "/".join(_SUFFIX.sub("", part) for part in full_id.split("/"))


def _base(full_id: str, per_component: bool) -> str:
    full_id = full_id or ""
    if per_component:  # Q-SPATIAL-14 fixed: strip "#k" per path component
        return _strip_suffixes(full_id)
    return full_id.split("#", 1)[0]  # Q-SPATIAL-14 reference: cut at the first '#'


def leaf_id(full_id: str, per_component: bool = False) -> str:
    """The last path component of the id, before the (first) ``#``."""
    return _base(full_id, per_component).rsplit("/", 1)[-1]


def parent_id(full_id: str, per_component: bool = False) -> str:
    """Everything before the last ``/`` of the id cut at the (first) ``#``; ``""`` when there is no ``/``."""
    base = _base(full_id, per_component)
    if "/" not in base:
        return ""
    return base.rsplit("/", 1)[0]


def norm_parts(full_id: str) -> list[str]:
    """Non-empty ``/``-parts of the id, each without a trailing ``#<digits>``."""
    return [_SUFFIX.sub("", part) for part in (full_id or "").split("/") if part]


def family(full_id: str, per_component: bool = False) -> str:
    """Sibling family: the leaf without a ``_<digits>`` or short (≤ 3 chars) ``_tail``."""
    leaf = leaf_id(full_id, per_component)
    if "_" not in leaf:
        return leaf
    head, tail = leaf.rsplit("_", 1)
    if tail.isdigit() or len(tail) <= 3:
        return head
    return leaf
