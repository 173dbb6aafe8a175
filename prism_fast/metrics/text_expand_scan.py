"""TextExpand's ``fallback_scan`` mode (spec text_expand.md §4), used only when the script does not parse: a
line-based tolerant environment plus a regex scan for text-producing calls with a quote-aware argument splitter;
arguments are constant-evaluated where they parse (``text_expand_eval``), else reduced to their literal words.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Iterator

from prism_fast.metrics.text_expand_eval import (CONSTRUCTORS, METHODS, UNKNOWN, ConstantEvaluator, constructor_table,
                                                 flatten_to_strings, non_blank)
from prism_fast.metrics.text_expand_text import tokenize
from prism_fast.profile import REFERENCE, Profile


# --------------------------------------------------------------------------------------------------------------
# §4 fallback scan
# --------------------------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SIMPLE_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*(?:#.*)?$")
_ALL_CALL_NAMES = sorted(set(CONSTRUCTORS) | set(METHODS), key=lambda n: (-len(n), n))
_CALL_SITE = re.compile(
    r"(?<![A-Za-z0-9_])(?P<prefix>\.??)(?P<name>" + "|".join(map(re.escape, _ALL_CALL_NAMES)) + r")\s*\("
)
_STRING_PREFIX = re.compile(r"(?<![A-Za-z0-9_])[rRuUbBfF]{1,3}(?=(\"\"\"|'''|\"|'))")
_LITERAL_WORDS = re.compile(r"\b(?:True|False|None)\b")
_OPERATOR_CHARS = re.compile(r"[+\-*/%=,:;\[\]{}()]")
_WHITESPACE = re.compile(r"\s+")
_TRIPLE_QUOTES = ('"""', "'''")


def _code_chars(text: str, start: int = 0, *, skip_whole_delimiters: bool = True) -> Iterator[tuple[int, str]]:
    """Yield ``(index, char)`` for the characters of ``text[start:]`` that lie outside string literals.

    Quote handling of the toolkit's loose scanners: ``'``/``"`` and triple quotes open strings; inside a
    single-quoted string a backslash escapes the next character and a newline ends the string; triple-quoted
    strings end only at the same triple quote (no escapes). With ``skip_whole_delimiters=False`` the scan
    resumes one character after an opening or closing triple quote instead of three (the toolkit's
    keyword splitter does this).
    """
    quote: str | None = None
    triple = False
    escaped = False
    index = start
    length = len(text)
    delimiter_step = 3 if skip_whole_delimiters else 1
    while index < length:
        char = text[index]
        if quote is not None:
            if triple:
                if text.startswith(quote * 3, index):
                    quote, triple = None, False
                    index += delimiter_step
                else:
                    index += 1
                continue
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote or char == "\n":
                quote = None
            index += 1
            continue
        if text[index:index + 3] in _TRIPLE_QUOTES:
            quote, triple = char, True
            index += delimiter_step
            continue
        if char in ("'", '"'):
            quote, triple = char, False
            index += 1
            continue
        yield index, char
        index += 1


def parenthesized_argument_text(text: str, open_index: int) -> str:
    """The text between ``text[open_index] == '('`` and its balancing ``)`` (or to the end if unbalanced)."""
    depth = 1
    for index, char in _code_chars(text, open_index + 1):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[open_index + 1:index]
    return text[open_index + 1:]


_OPENERS = {"(": 0, "[": 1, "{": 2}
_CLOSERS = {")": 0, "]": 1, "}": 2}


def split_top_level_arguments(text: str) -> list[str]:
    """Split at commas outside strings and brackets; parts are stripped. Empty middle parts are kept, an empty
    tail is dropped."""
    parts: list[str] = []
    depth = [0, 0, 0]
    part_start = 0
    for index, char in _code_chars(text):
        if char in _OPENERS:
            depth[_OPENERS[char]] += 1
        elif char in _CLOSERS:
            depth[_CLOSERS[char]] -= 1
        elif char == "," and depth == [0, 0, 0]:
            parts.append(text[part_start:index].strip())
            part_start = index + 1
    tail = text[part_start:].strip()
    if tail:
        parts.append(tail)
    return parts


def split_keyword_argument(arg_text: str) -> tuple[str | None, str]:
    """``(name, value_text)`` when a top-level ``=`` has a bare identifier on its left (the first such ``=``),
    else ``(None, stripped_text)``."""
    depth = [0, 0, 0]
    for index, char in _code_chars(arg_text, skip_whole_delimiters=False):
        if char in _OPENERS:
            depth[_OPENERS[char]] += 1
        elif char in _CLOSERS:
            depth[_CLOSERS[char]] -= 1
        elif char == "=" and depth == [0, 0, 0]:
            left = arg_text[:index].strip()
            if _IDENTIFIER.fullmatch(left):
                return left, arg_text[index + 1:].strip()
    return None, arg_text.strip()


def heuristic_text(expr_text: str) -> str:
    """The §4 heuristic text of an expression: string prefixes, quotes and True/False/None removed, operator
    characters turned into spaces, whitespace collapsed; "" unless it yields at least one token."""
    cleaned = _STRING_PREFIX.sub("", expr_text)
    for quote in ('"""', "'''", '"', "'"):
        cleaned = cleaned.replace(quote, " ")
    cleaned = _LITERAL_WORDS.sub(" ", cleaned)
    cleaned = _OPERATOR_CHARS.sub(" ", cleaned)
    cleaned = _WHITESPACE.sub(" ", cleaned).strip()
    return cleaned if tokenize(cleaned) else ""


def evaluate_expression_text(expr_text: str, env: dict, profile: Profile = REFERENCE) -> Any:
    """Constant-evaluate source text with ``env`` as both local and global environment; UNKNOWN when it does
    not parse as an expression."""
    try:
        tree = ast.parse(expr_text, mode="eval")
    except Exception:
        return UNKNOWN
    return ConstantEvaluator(profile, dict(env)).value(tree.body, dict(env))


class FallbackScanner:
    """The fallback mode of §4 over raw (unparsable) source text."""

    def __init__(self, profile: Profile = REFERENCE):
        self.profile = profile
        self.constructors = constructor_table(profile)

    def tolerant_environment(self, code: str) -> dict:
        env: dict = {}
        for line in code.splitlines():
            match = _SIMPLE_ASSIGN.match(line)
            if not match:
                continue
            name, expr_text = match.groups()
            value = evaluate_expression_text(expr_text, env, self.profile)
            if value is UNKNOWN:
                value = heuristic_text(expr_text) or UNKNOWN
            if value is not UNKNOWN:
                env[name] = value
            elif self.profile.fixes("Q-TEXT-7"):
                env.pop(name, None)  # Q-TEXT-7 improved: an unknown assignment unbinds the name
        return env

    def expression_texts(self, expr_text: str, env: dict) -> list[str]:
        expr_text = expr_text.strip()
        if not expr_text:
            return []
        if _IDENTIFIER.fullmatch(expr_text):
            return non_blank(flatten_to_strings(env.get(expr_text, UNKNOWN)))
        value = evaluate_expression_text(expr_text, env, self.profile)
        if value is not UNKNOWN:
            return non_blank(flatten_to_strings(value))
        guess = heuristic_text(expr_text)
        return [guess] if guess else []

    def extract(self, code: str) -> list[str]:
        env = self.tolerant_environment(code)
        texts: list[str] = []
        for match in _CALL_SITE.finditer(code):
            name = match.group("name")
            if match.group("prefix") == ".":
                selection = METHODS.get(name)  # after a bare '.', only method names count
            else:
                selection = self.constructors.get(name) or METHODS.get(name)
            if selection is None:
                continue
            arguments = split_top_level_arguments(parenthesized_argument_text(code, match.end() - 1))
            positional: list[str] = []
            keywords: dict[str, str] = {}
            for argument in arguments:
                key, value_text = split_keyword_argument(argument)
                if key is None:
                    positional.append(value_text)
                else:
                    keywords[key] = value_text
            chosen: list[str] = []
            if selection.positional == "all":
                chosen.extend(positional)
            elif isinstance(selection.positional, int) and len(positional) > selection.positional:
                chosen.append(positional[selection.positional])
            chosen.extend(keywords[key] for key in selection.keywords if key in keywords)  # table order
            for expr_text in chosen:
                texts.extend(self.expression_texts(expr_text, env))
        return texts
