"""Self-debugging (ours): the renderer's error or the auditor's findings go back to the model as a follow-up turn.

The paper evaluates first attempts only. With ``generate.rounds=k`` each round's cleaned script is rendered and
audited; a failed render returns its error tail, a spatial failure returns the audit findings as text, an empty
reply says that no program was found. The loop stops for a task once a round passes Exec and Spatial (or the
provider fails). Pure functions only: the loop is ``rounds.py``, the driver ``prism_fast.pipeline.generate_run``.

Exec@k / Spatial@k (:func:`exec_spatial_at_k`): the share of tasks whose program rendered (passed Spatial) in
**some** round ≤ k. Rounds after a task stopped count as carrying its last outcome, so the curves never drop.
Spatial pass of a round follows the profile: ``visual_structure_pass == 1`` in reference (Q-FUNNEL-1), and
additionally Exec success of the same round when Q-FUNNEL-1 is fixed.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Mapping

from prism_fast.generate.cleaning import THINK_RE

ROUND_ID_RE = re.compile(r"^(?P<sample>.+)#r(?P<round>\d+)$")
FEEDBACK_KINDS = ("none", "render_error", "spatial_findings", "audit_error", "empty_output")


def round_row_id(sample_id: str, round_no: int) -> str:
    """Store key of one round: the sample id for round 1 (joins with the other stages), ``<id>#r<k>`` after."""
    return sample_id if round_no == 1 else f"{sample_id}#r{round_no}"


def sample_of(row: Mapping) -> str:
    if row.get("sample_id"):
        return str(row["sample_id"])
    m = ROUND_ID_RE.match(str(row["id"]))
    return m.group("sample") if m else str(row["id"])


def spatial_passed(exec_success: bool, audit_row: Mapping | None, requires_exec: bool) -> bool:
    """Spatial pass of one round; ``requires_exec`` is Q-FUNNEL-1 fixed (improved)."""
    vsp = bool(audit_row and int(audit_row.get("visual_structure_pass") or 0) == 1)
    return vsp and (exec_success or not requires_exec)


def assistant_turn(raw: str) -> str:
    """What the model said, as the assistant turn of the next request (thinking blocks dropped)."""
    return THINK_RE.sub("", raw or "").strip()


def user_message(text: str) -> dict:
    """A user turn in the toolkit's message shape (content = one text part, generation.md §2.3)."""
    return {"role": "user", "content": [{"type": "text", "text": text}]}


_TEXT = {
    "en": {
        "render": ("Rendering your program with Manim Community Edition v0.19.0 (`manim -ql`) failed. "
                   "The end of the error output:\n\n{tail}\n\nFix the program. Reply with the complete corrected "
                   "program only, no explanations."),
        "timeout": ("Rendering your program with Manim Community Edition v0.19.0 did not finish within the time "
                    "limit:\n\n{tail}\n\nMake it finish quickly. Reply with the complete corrected program only."),
        "spatial": ("Your program renders, but a layout check of every animation step found these problems "
                    "(coordinates in Manim units; the visible frame is x in [-7.11, 7.11], y in [-4, 4]):\n\n{items}"
                    "\n\nFix the layout so that nothing leaves the frame, overlaps another element or sticks out "
                    "of its box. Reply with the complete corrected program only, no explanations."),
        "audit": ("Your program renders, but the layout check could not evaluate it: {msg}\n\nMake sure the scene "
                  "plays its animations (self.play / self.wait). Reply with the complete corrected program only."),
        "empty": ("Your reply contained no runnable Manim program. Reply with the complete program only: Python "
                  "code for Manim Community Edition v0.19.0, starting with `from manim import *`."),
        "oob": "out of the frame: {m} (by {d})",
        "overlap": "overlap: {a} and {b} (ratio {r})",
        "leak": "sticks out of its box: {m} out of {c} (ratio {r})",
        "more": "... and {n} more",
    },
    "zh": {
        "render": ("使用 Manim Community Edition v0.19.0（`manim -ql`）渲染你的代码失败。错误输出的末尾如下：\n\n{tail}\n\n"
                   "请修复代码，只输出完整的修正后代码，不要任何解释。"),
        "timeout": "使用 Manim CE v0.19.0 渲染你的代码超时：\n\n{tail}\n\n请让代码尽快完成，只输出完整的修正后代码。",
        "spatial": ("你的代码可以渲染，但对每个动画步骤的版面检查发现以下问题（Manim 坐标单位；可见画面为 x ∈ [-7.11, 7.11]，"
                    "y ∈ [-4, 4]）：\n\n{items}\n\n请修正版面，使元素不超出画面、不互相遮挡、不溢出其外框。只输出完整的修正后代码，不要任何解释。"),
        "audit": "你的代码可以渲染，但版面检查无法评估：{msg}\n\n请确保场景播放了动画（self.play / self.wait）。只输出完整的修正后代码。",
        "empty": "你的回复中没有可运行的 Manim 程序。请只输出完整的 Manim Community Edition v0.19.0 Python 代码，以 `from manim import *` 开头。",
        "oob": "超出画面：{m}（超出 {d}）",
        "overlap": "遮挡：{a} 与 {b}（比例 {r}）",
        "leak": "溢出外框：{m} 溢出 {c}（比例 {r}）",
        "more": "……以及另外 {n} 处",
    },
}


def _fenced(text: str) -> str:
    return "```\n" + text.replace("```", "'''") + "\n```"


def findings_text(report, language: str, max_items: int = 20) -> str:
    """The audit report (``{scene: {segment: {out_of_bounds, overlaps, leaks}}}``) as one line per finding."""
    t = _TEXT[language]
    if isinstance(report, str):
        report = json.loads(report or "{}")
    lines: list[str] = []
    for scene, segments in (report or {}).items():
        if not isinstance(segments, dict):
            continue
        for segment, issues in segments.items():
            where = f"{scene} / {segment}: "
            for f in issues.get("out_of_bounds", []):
                lines.append(where + t["oob"].format(m=f.get("mobject"), d=f.get("dist")))
            for f in issues.get("overlaps", []):
                a, b = (list(f.get("mobjects") or []) + ["?", "?"])[:2]
                lines.append(where + t["overlap"].format(a=a, b=b, r=f.get("ratio")))
            for f in issues.get("leaks", []):
                lines.append(where + t["leak"].format(m=f.get("mobject"), c=f.get("container"), r=f.get("ratio")))
    shown = lines[:max_items]
    if len(lines) > max_items:
        shown.append(t["more"].format(n=len(lines) - max_items))
    return "\n".join(f"- {line}" for line in shown)


def build_feedback(language: str, *, has_script: bool, render_row: Mapping | None, audit_row: Mapping | None,
                   exec_success: bool, spatial_pass: bool, error_tail_chars: int = 2000,
                   max_findings: int = 20) -> tuple[str, str | None]:
    """``(feedback_kind, text)`` for the next user turn; ``("none", None)`` when the round passed."""
    t = _TEXT["zh" if language == "zh" else "en"]
    lang = "zh" if language == "zh" else "en"
    if not has_script:
        return "empty_output", t["empty"]
    if not exec_success:
        row = render_row or {}
        tail = (row.get("error") or row.get("stderr_tail") or "render failed").strip()[-error_tail_chars:]
        key = "timeout" if row.get("timed_out") or row.get("status") == "timeout" else "render"
        return "render_error", t[key].format(tail=_fenced(tail))
    if spatial_pass:
        return "none", None
    audit = audit_row or {}
    if not int(audit.get("audit_success") or 0):
        return "audit_error", t["audit"].format(msg=audit.get("error_msg") or "no result")
    items = findings_text(audit.get("visual_audit_report") or {}, lang, max_findings)
    if not items:  # a failed pass without listed findings (should not happen): still say what failed
        items = "- " + json.dumps(audit.get("visual_issue_breakdown") or {}, sort_keys=True)
    return "spatial_findings", t["spatial"].format(items=items)


def exec_spatial_at_k(rows: Iterable[Mapping], rounds: int | None = None) -> dict[int, dict[str, float]]:
    """Exec@k and Spatial@k over self-debugging rows: ``{k: {"exec": rate, "spatial": rate, "tasks": n}}``.

    ``rows`` are ``selfdebug`` rows (dicts with ``model``, ``lang``, ``sample_id`` or ``id``, ``round``,
    ``exec_success``, ``spatial_pass``). A task is one (model, lang, sample); it counts as passing at k when some
    round ≤ k passed. ``rounds`` defaults to the largest round present. The denominator is every task seen.
    """
    best: dict[tuple, dict[int, tuple[bool, bool]]] = {}
    max_round = 0
    for r in rows:
        key = (r.get("model"), r.get("lang"), sample_of(r))
        k = int(r["round"])
        max_round = max(max_round, k)
        best.setdefault(key, {})[k] = (bool(r.get("exec_success")), bool(r.get("spatial_pass")))
    k_max = int(rounds) if rounds is not None else max_round
    out: dict[int, dict[str, float]] = {}
    n = len(best)
    for k in range(1, k_max + 1):
        exec_ok = sum(1 for by_round in best.values() if any(e for j, (e, _) in by_round.items() if j <= k))
        spat_ok = sum(1 for by_round in best.values() if any(s for j, (_, s) in by_round.items() if j <= k))
        out[k] = {"exec": exec_ok / n if n else 0.0, "spatial": spat_ok / n if n else 0.0, "tasks": n}
    return out


def format_at_k(curve: Mapping[int, Mapping[str, float]]) -> str:
    lines = ["| k | Exec@k % | Spatial@k % | tasks |", "|---|---|---|---|"]
    for k in sorted(curve):
        c = curve[k]
        lines.append(f"| {k} | {100 * c['exec']:.1f} | {100 * c['spatial']:.1f} | {c['tasks']} |")
    return "\n".join(lines)
