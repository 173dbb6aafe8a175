"""A script sees no TeX output of another sample (real pipeline, real sandbox): after one run has published a
formula to the shared TeX cache, a script of a later run in the same runs_root that the TeX gate lets see its view
finds nothing there (the manifest) that names a file it could open -- the SVG glyphs of other samples' answers stay
out of reach (the view's folders cannot be listed either: tests/security/test_cache_integrity.py). The formula is
still served to a sample whose own text compiles it."""

from __future__ import annotations

import json
import re

from prism_fast.execute.sandbox import host_isolation
from prism_fast.execute.texcache import VIEW_INSIDE
from prism_fast.store import ResultsStore

import pytest

from tests.pipeline.conftest import compose_config

pytestmark = pytest.mark.skipif(host_isolation().level == "unsafe", reason="needs a sandbox")

FORMULA = r"\int_0^1 x^{7} \, dx = \frac{1}{8}"
ANSWER = f"""from manim import *

class Answer(Scene):
    def construct(self):
        self.play(Write(MathTex(r"{FORMULA}")))
"""

# what the TeX gate lets a script use (its text names no module that lists folders): read the manifest, try each
# name it holds as a file of the view
PEEK = f"""import numpy as np
from manim import *

class Peek(Scene):
    def construct(self):
        root = {VIEW_INSIDE!r}
        try:
            tokens = np.fromfile(root + "/verified.txt", dtype=np.uint8).tobytes().decode().split()
        except OSError:
            tokens = []
        names = tokens[0::2]
        opened = 0
        for n in names:
            try:
                np.fromfile(f"{{root}}/svg/{{n[:2]}}/{{n}}.svg", dtype=np.uint8)
                opened += 1
            except OSError:
                pass
        raise SystemExit(f"REPORT manifest={{len(names)}} opened={{opened}}")
"""


def _eval(tmp_path, name: str, scripts: dict) -> dict:
    from prism_fast.pipeline.run import options_from_config, run_eval

    ds = tmp_path / f"{name}.jsonl"
    ds.write_text("".join(json.dumps({"id": sid, "language": "en", "instruction": "i", "reference_answer": text}) + "\n"
                          for sid, text in scripts.items()), encoding="utf-8")
    cfg = compose_config(f"dataset.path={ds}", "model=reference", f"model.name={name}", "lang=en",
                         f"runs_root={tmp_path / 'runs'}", "cluster.num_cpus=2", "metrics.td.enabled=false",
                         "metrics.padvc.enabled=false", "metrics.text_expand.enabled=false", "audit.enabled=false")
    opts = options_from_config(cfg)
    run_eval(opts)
    return {r["id"]: r for r in ResultsStore(opts.run_dir).read("exec").to_pylist()}


def test_a_script_cannot_enumerate_or_open_other_samples_tex_output(tmp_path):
    # (an entry is published the second time a formula is compiled: texcache.harvest)
    first = _eval(tmp_path, "first", {"PRISM-EN-000001": ANSWER, "PRISM-EN-000004": ANSWER + "\n"})
    assert sum(r["tex_cache_published"] or 0 for r in first.values()) >= 1, first
    later = _eval(tmp_path, "later", {"PRISM-EN-000002": PEEK, "PRISM-EN-000003": ANSWER + "# (not a render cache hit)\n"})
    assert later["PRISM-EN-000003"]["tex_cache_hits"] >= 1  # the formula is still served to its own text
    text = (later["PRISM-EN-000002"].get("error") or "") + (later["PRISM-EN-000002"].get("stderr_tail") or "")
    found = re.search(r"REPORT manifest=(\d+) opened=(\d+)", text)
    assert found, text[-2000:]
    manifest, opened = map(int, found.groups())
    assert later["PRISM-EN-000002"]["tex_cache"] == "on", later["PRISM-EN-000002"]  # the gate let it see the view
    assert manifest >= 1  # the view holds the published formula ...
    assert opened == 0  # ... and nothing the script can read names a file it can open
