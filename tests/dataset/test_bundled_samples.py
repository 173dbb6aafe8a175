"""The bundled sample set follows the released schema and PRISM's style (renders are checked in
tests/pipeline/test_eval_reference.py)."""

from __future__ import annotations

import ast
import re
from collections import Counter

import pytest

from prism_fast.dataset.bundled import SAMPLES_DIR, bundled_dataset_path
from prism_fast.dataset.loader import load_dataset
from prism_fast.dataset.templates import BODY_MARKERS

TASKS = load_dataset(bundled_dataset_path()).tasks


def test_counts_and_ids():
    counts = Counter(t.language for t in TASKS)
    assert counts["en"] >= 24 and counts["zh"] >= 24
    for t in TASKS:
        assert re.fullmatch(rf"SAMPLE-{t.language.upper()}-\d{{6}}", t.id)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_instruction_is_template_plus_markdown_outline(task):
    marker = BODY_MARKERS[task.language]
    assert marker in task.instruction
    body = task.instruction.split(marker, 1)[1]
    assert body.startswith("\n\n")
    markdown = (SAMPLES_DIR / task.language / f"{task.id}.md").read_text(encoding="utf-8").strip()
    assert body[2:] == markdown
    assert 400 <= len(markdown) <= 1200, len(markdown)
    assert markdown.startswith("# ") and "\n## " in markdown
    assert re.search(r"^\s*(?:[-*]|\d+\.)\s", markdown, re.M), "needs a list"
    assert "$" in markdown, "needs LaTeX"


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_reference_answer_shape(task):
    code = task.reference_answer
    assert 60 <= len(code.splitlines()) <= 120
    tree = ast.parse(code)
    scenes = [n for n in tree.body if isinstance(n, ast.ClassDef)
              and any(isinstance(b, ast.Name) and b.id == "Scene" for b in n.bases)]
    assert len(scenes) == 1
    assert "from manim import *" in code
    assert code.count("self.play(") >= 3 and "self.wait(" in code
    assert any(op in code for op in (".arrange(", ".next_to(", ".to_edge("))
    assert "Text(" in code
    if task.language == "zh":
        assert "Noto Sans CJK SC" in code
        for m in re.finditer(r"(?:MathTex|Tex)\((.*?)\)", code):
            assert not re.search(r"[\u4e00-\u9fff]", m.group(1)), "Chinese inside TeX"
