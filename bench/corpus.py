"""Rebuild the open parity corpus (issue #14) from fetched public repositories.

The corpus is public Manim CE code that nobody on this project wrote: Manim's own example and test scenes, a
public prompt→code dataset, LLM-written scripts and other public Manim CE projects. Manim's documentation
gallery (``docs/source/examples.rst``) and its docstrings are *not* used: they are kept for independent checks.
The scripts are never committed; this file is the recipe (sources pinned to commits + a selection rule), and
``docs/parity.md`` records what it produced.

    python bench/corpus.py --mirror-root MIRRORS --out CORPUS_DIR [--per-source-cap N]

``--mirror-root`` holds bare git directories ``<owner>+<name>/repo`` (what the project's ``fetch`` tool
writes; ``git clone --bare https://github.com/<owner>/<name> <owner>+<name>/repo`` gives the same layout).
Every file is read at the pinned commit with ``git show``, so the corpus does not depend on when it was built.

Selection rule (deterministic):
1. Candidate files: the globs of each source (Python files, or the code field of a JSONL dataset).
2. A file must parse (Python 3.11), be ≤ 15,000 characters, import manim (``from manim import`` /
   ``import manim``) and nothing outside ``ALLOWED_IMPORTS``, and avoid ``BANNED_SUBSTRINGS`` (ManimGL,
   OpenGL, file assets, sound, voice-over, plugins).
3. One script per *scene*: every top-level class whose base name ends in ``Scene`` and that no other class of
   the file derives from. A file with several scenes gives one script each; the script is the file with the
   *other* such scene classes removed (imports, helpers and base classes kept, original text otherwise).
4. The scene must call ``self.play`` or ``self.wait`` (a static scene makes no video), and its static
   duration estimate (``estimate_seconds``) must be ≤ ``MAX_SECONDS``, so the run stays within a CPU budget.
5. Duplicates (same script text) are dropped. Each source's scenes are ordered by
   sha256("<repo>:<path>:<class>") and capped; the manifest interleaves the sources round-robin, so any
   prefix (``bench/parity.py --limit``) is a mix of all sources.
Output: ``<out>/<id>.py`` and ``<out>/manifest.jsonl`` (id, repo, commit, path, scene, sha256,
estimate_seconds), id = ``<source tag>_<k:03d>_<Scene>``.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from prism_fast.execute.scene_select import _dotted  # noqa: E402  `a.b.c` of a Name/Attribute chain
from prism_fast.execute.cost import call_seconds, literal_number  # noqa: E402  the render-cost estimate's literals

MAX_CHARS = 15_000
MAX_SECONDS = 40.0
ALLOWED_IMPORTS = frozenset({
    "manim", "numpy", "math", "random", "itertools", "functools", "collections", "typing", "string",
    "colorsys", "copy", "__future__", "dataclasses", "enum", "fractions", "decimal", "statistics", "operator",
    "re", "textwrap", "abc", "networkx", "scipy", "sympy",
})
BANNED_SUBSTRINGS = (
    "manimlib", "manimgl", "opengl", "OpenGL", "ImageMobject", "SVGMobject", "add_sound", "open(", "code_file",
    "file_name=", "Voiceover", "voiceover", "manim_physics", "manim_ml", "manim_slides", "from_file",
    "os.system", "subprocess",
)


@dataclass(frozen=True)
class Source:
    tag: str
    repo: str                    # owner/name on GitHub
    commit: str
    globs: tuple[str, ...]       # paths inside the repo (fnmatch patterns)
    cap: int
    jsonl_code: bool = False     # the files are JSONL: one script per line, in messages[-1].content
    note: str = ""


SOURCES: tuple[Source, ...] = (
    Source("mce", "ManimCommunity/manim", "0204c66ab6fed0375ce13023cdd8f4abfb1689cb",
           ("example_scenes/basic.py", "example_scenes/customtex.py", "example_scenes/advanced_tex_fonts.py",
            "tests/test_scene_rendering/simple_scenes.py", "tests/test_scene_rendering/infallible_scenes.py",
            "tests/test_logging/basic_scenes_*.py", "tests/test_logging/bad_tex_scene.py",
            "tests/test_plugins/simple_scenes.py"), cap=60,
           note="Manim CE's example_scenes/ and the scenes of its own test suite"),
    Source("edoh", "360macky/generative-manim", "f3d242c84a0a9754dbd191f288513ac2f0152b23",
           ("datasets/edoh-dataset-format-pep8.jsonl",), cap=80, jsonl_code=True,
           note="prompt→code dataset (599 pairs, HF Edoh/manim_python, PEP8-formatted by the repo)"),
    Source("m2m", "HarleyCoops/Math-To-Manim", "c2459b0d6c8d0e0339b3bfc8baeccff34a1fa19a", ("*.py",), cap=40,
           note="LLM-written Manim CE scenes (Claude/Gemini/Kimi/DeepSeek pipelines)"),
    Source("skb", "Skillbanc/manim-templates", "8b23c030071a43b09876ad5fde0d2c7aaa6fda9f", ("Source/*.py",),
           cap=40, note="public educational Manim CE scenes"),
    Source("ytm", "sjchem/youtube-manim", "8dca318fae2871886152111ffd1b1447e776e058", ("*.py",), cap=30,
           note="public YouTube Manim CE project"),
    Source("shay", "ShaySha-PRa/Manim_project", "64c0f0608327fe1a4d8ed37f01fb45b7e56628ec", ("*.py",), cap=30,
           note="public Manim CE workbench: its reference and benchmark scenes"),
)


# ---- git access ---------------------------------------------------------------------------------------

def git_dir(mirror_root: Path, repo: str) -> Path:
    return mirror_root / repo.replace("/", "+") / "repo"


def _git(gdir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={gdir}", *args], check=True, capture_output=True).stdout


def resolve_commit(gdir: Path, commit: str) -> str:
    """The full commit id (accepts a unique prefix); raises when the mirror lacks it."""
    return _git(gdir, "rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()


def list_paths(gdir: Path, commit: str) -> list[str]:
    return _git(gdir, "ls-tree", "-r", "--name-only", commit).decode("utf-8", "replace").splitlines()


def read_text(gdir: Path, commit: str, path: str) -> str | None:
    try:
        return _git(gdir, "show", f"{commit}:{path}").decode("utf-8")
    except (subprocess.CalledProcessError, UnicodeDecodeError):
        return None


# ---- selection rule -----------------------------------------------------------------------------------

def _base_name(node: ast.expr) -> str:
    """The last component of a base/callee written as a name or dotted name ("" for anything else)."""
    return (_dotted(node) or "").rsplit(".", 1)[-1]


def _imports_ok(tree: ast.Module) -> bool:
    has_manim = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: a local module
                return False
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        if any(r not in ALLOWED_IMPORTS for r in roots):
            return False
        has_manim = has_manim or "manim" in roots
    return has_manim


def scene_classes(tree: ast.Module) -> list[ast.ClassDef]:
    """Top-level classes with a base named ``*Scene`` that no other top-level class of the file derives from."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    used_as_base = {_base_name(b) for c in classes for b in c.bases}
    return [c for c in classes if any(_base_name(b).endswith("Scene") for b in c.bases)
            and c.name not in used_as_base]


def estimate_seconds(cls: ast.ClassDef) -> tuple[float, int]:
    """(Static animation time of a scene class, number of play/wait calls). Each ``self.play`` counts its
    literal ``run_time`` (default 1 s), each ``self.wait`` its literal duration (default 1 s); a call inside
    ``for … in range(<literal>)`` counts that many times, inside any other loop 4 times."""

    total = 0.0
    calls = 0

    def visit(node, mult: float):
        nonlocal total, calls
        if isinstance(node, (ast.For, ast.While)):
            k = 4.0
            if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and _base_name(node.iter.func) == "range":
                nums = [literal_number(a) for a in node.iter.args]
                if nums and all(n is not None for n in nums):
                    k = float(len(range(*[int(n) for n in nums])))
            for child in node.body + node.orelse:
                visit(child, mult * k)
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("play", "wait") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            calls += 1
            total += mult * call_seconds(node)   # the render-cost estimate's rule (execute/cost.py)
        for child in ast.iter_child_nodes(node):
            visit(child, mult)

    visit(cls, 1.0)
    return total, calls


def split_scene(source: str, tree: ast.Module, keep: ast.ClassDef, drop: list[ast.ClassDef]) -> str:
    """The file's text without the line ranges of the ``drop`` classes (decorators included)."""
    lines = source.splitlines(keepends=True)
    cut = set()
    for cls in drop:
        if cls is keep:
            continue
        start = min([cls.lineno] + [d.lineno for d in cls.decorator_list])
        cut.update(range(start - 1, cls.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in cut)


def candidates_from_text(text: str) -> list[tuple[str, str, float]]:
    """[(scene name, script text, estimate_seconds)] of one file's text under the selection rule."""
    if len(text) > MAX_CHARS or any(s in text for s in BANNED_SUBSTRINGS):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    if not _imports_ok(tree):
        return []
    scenes = scene_classes(tree)
    out = []
    for cls in scenes:
        seconds, calls = estimate_seconds(cls)
        if calls == 0 or seconds > MAX_SECONDS:
            continue
        script = split_scene(text, tree, cls, scenes) if len(scenes) > 1 else text
        try:
            ast.parse(script)
        except SyntaxError:
            continue
        out.append((cls.name, script, round(seconds, 2)))
    return out


def _jsonl_scripts(text: str) -> list[tuple[int, str]]:
    out = []
    for k, line in enumerate(text.splitlines(), start=1):
        try:
            doc = json.loads(line)
            code = doc["messages"][-1]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            continue
        if isinstance(code, str):
            out.append((k, code))
    return out


def source_candidates(src: Source, gdir: Path) -> list[dict]:
    commit = resolve_commit(gdir, src.commit)
    paths = [p for p in list_paths(gdir, commit) if any(fnmatch.fnmatch(p, g) for g in src.globs)]
    found = []
    for path in sorted(paths):
        text = read_text(gdir, commit, path)
        if text is None:
            continue
        units = [(f"{path}#L{k}", code) for k, code in _jsonl_scripts(text)] if src.jsonl_code else [(path, text)]
        for where, code in units:
            for scene, script, seconds in candidates_from_text(code):
                key = hashlib.sha256(f"{src.repo}:{where}:{scene}".encode()).hexdigest()
                found.append({"repo": src.repo, "commit": commit, "path": where, "scene": scene, "script": script,
                              "estimate_seconds": seconds, "order_key": key})
    found.sort(key=lambda r: r["order_key"])
    return found


def _safe(name: str, n: int = 32) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:n]


def build(mirror_root: Path, out: Path, cap_override: int | None = None, sources=SOURCES) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    per_source = []
    for src in sources:
        gdir = git_dir(mirror_root, src.repo)
        if not gdir.exists():
            raise SystemExit(f"missing mirror of {src.repo}: {gdir} (fetch it first)")
        per_source.append((src, source_candidates(src, gdir)))
    seen_text: set[str] = set()
    chosen: list[list[dict]] = []
    for src, cands in per_source:
        cap = cap_override if cap_override is not None else src.cap
        picked = []
        for c in cands:
            digest = hashlib.sha256(c["script"].encode()).hexdigest()
            if digest in seen_text:
                continue
            seen_text.add(digest)
            c["sha256"] = digest
            c["tag"] = src.tag
            picked.append(c)
            if len(picked) >= cap:
                break
        chosen.append(picked)
    manifest = []
    for rnd in range(max((len(p) for p in chosen), default=0)):   # round-robin across sources
        for picked in chosen:
            if rnd < len(picked):
                c = picked[rnd]
                c["id"] = f"{c['tag']}_{rnd:03d}_{_safe(c['scene'])}"
                manifest.append(c)
    for c in manifest:
        (out / f"{c['id']}.py").write_text(c["script"], encoding="utf-8")
    with (out / "manifest.jsonl").open("w", encoding="utf-8") as fh:
        for c in manifest:
            fh.write(json.dumps({k: c[k] for k in ("id", "repo", "commit", "path", "scene", "sha256",
                                                   "estimate_seconds")}) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror-root", type=Path, required=True,
                    help="folder holding the fetched bare mirrors as <owner>+<name>/repo")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-source-cap", type=int, default=None, help="override every source's cap")
    args = ap.parse_args(argv)
    manifest = build(args.mirror_root, args.out, args.per_source_cap)
    counts: dict[str, int] = {}
    for c in manifest:
        counts[c["repo"]] = counts.get(c["repo"], 0) + 1
    for repo, n in counts.items():
        print(f"{repo}: {n}")
    print(f"total: {len(manifest)} scripts in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
