"""Prompt-body extraction, segment normalisation and tokenisation for TextExpand (spec text_expand.md §5.1–§5.2).

Pure string functions shared by the statistics and by the fallback scan's heuristic text.
"""

from __future__ import annotations

import re

#: Body markers, checked in this order; the text after the first one found is the prompt body (§5.1).
PROMPT_BODY_MARKERS: tuple[str, ...] = (
    "Markdown 讲义如下：",
    "Markdown 讲义如下:",
    "The Markdown lecture notes are as follows:",
    "The Markdown lecture notes are as follows：",
)

_CONTEXT_BLOCK = re.compile(r"<!--\s*CONTEXT:BEGIN\s*-->.*?<!--\s*CONTEXT:END\s*-->", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LATEX_TEXT_COMMAND = re.compile(
    r"\\(?:text|mathrm|operatorname|mathbf|mathit|textbf|textit|mathsf|mathtt)\{([^{}]*)\}"
)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WHITESPACE = re.compile(r"\s+")
_LATEX_PUNCTUATION = str.maketrans({char: " " for char in "{}^_&$"})
_CURLY_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})
_ASCII_LOWER = str.maketrans({chr(code): chr(code + 32) for code in range(ord("A"), ord("Z") + 1)})

#: One token per basic-block CJK ideograph, per ASCII letter run (one optional 'suffix), per integer/decimal.
TOKEN_PATTERN = re.compile(r"[\u4e00-\u9fff]|[A-Za-z]+(?:'[A-Za-z]+)?|\d+(?:\.\d+)?")


def prompt_body(prompt: str) -> str:
    """The prompt body: text after the first marker found (else the whole prompt), with CONTEXT blocks and then
    HTML comments replaced by a space, stripped."""
    body = prompt
    for marker in PROMPT_BODY_MARKERS:
        if marker in body:
            body = body.split(marker, 1)[1]
            break
    body = _CONTEXT_BLOCK.sub(" ", body)
    body = _HTML_COMMENT.sub(" ", body)
    return body.strip()


def latex_to_plain(text: str) -> str:
    """§5.2 step 1: unwrap text-like commands (repeatedly), drop ``\\\\``, other commands and ``{}^_&$``."""
    previous = None
    while previous != text:
        previous = text
        text = _LATEX_TEXT_COMMAND.sub(r" \1 ", text)
    text = text.replace("\\\\", " ")
    text = _LATEX_COMMAND.sub(" ", text)
    text = text.translate(_LATEX_PUNCTUATION)
    return _WHITESPACE.sub(" ", text).strip()


def normalize_segment(text: str) -> str:
    """§5.2: LaTeX to plain text, curly quotes to straight quotes, whitespace collapsed, ASCII A–Z lower-cased
    (other scripts are left alone)."""
    text = latex_to_plain(text).translate(_CURLY_QUOTES)
    text = _WHITESPACE.sub(" ", text).strip()
    return text.translate(_ASCII_LOWER)


def tokenize(text: str) -> list[str]:
    """The tokens of ``normalize_segment(text)`` (Chinese per character, ASCII words, numbers)."""
    return TOKEN_PATTERN.findall(normalize_segment(text))
