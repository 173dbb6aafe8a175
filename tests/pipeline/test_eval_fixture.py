"""model=fixture through the whole pipeline: cleaning → sandboxed render → taxonomy, rows in the store.
(Every fixture's classification is covered by tests/execute/test_taxonomy.py; this checks the wiring on a
subset that spans the stages of the funnel.)"""

from __future__ import annotations

import json

from prism_fast.fixtures import bundled_responses_path
from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

INTENTS = {r["id"]: r["intent"] for r in map(json.loads, bundled_responses_path().read_text().splitlines())}


def _pick(pred):
    return next(i for i, intent in INTENTS.items() if pred(intent))


def test_fixture_model_rows_carry_the_taxonomy(tmp_path):
    from prism_fast.pipeline.run import options_from_config, run_eval

    chosen = {
        "clean": _pick(lambda t: t["fine_type"] is None and t["spatial"] is None),
        "empty": _pick(lambda t: t["fine_type"] == "empty_output"),
        "pollution": _pick(lambda t: t["fine_type"] == "format_contamination"),
        "hallucination": _pick(lambda t: t["fine_type"] == "api_hallucination"),
        "misuse": _pick(lambda t: t["fine_type"] == "api_misuse"),
    }
    ids = ",".join(chosen.values())
    cfg = compose_config("model=fixture", f"runs_root={tmp_path}", f"dataset.ids=[{ids}]", "cluster.num_cpus=2",
                         "metrics.td.enabled=false")
    opts = options_from_config(cfg)
    summary = run_eval(opts)
    store = ResultsStore(opts.run_dir)
    tasks = {r["id"]: r for r in store.read("tasks").to_pylist()}
    rows = {r["id"]: r for r in store.read("exec").to_pylist()}
    assert set(rows) == set(chosen.values())

    clean = rows[chosen["clean"]]
    assert clean["success"] and clean["status"] == "ok" and clean["error_type"] is None
    assert clean["play_hashing"] is False  # execute.play_hashing default: --disable_caching
    empty = rows[chosen["empty"]]
    assert not empty["success"] and empty["error_kind"] == "no_script" and empty["error_type"] == "empty_output"
    assert tasks[chosen["empty"]]["has_script"] is False
    for name in ("pollution", "hallucination", "misuse"):
        sid = chosen[name]
        assert rows[sid]["error_type"] == INTENTS[sid]["fine_type"], (name, rows[sid]["error_msg"])
        assert rows[sid]["error_category"] == INTENTS[sid]["category"]
    assert json.loads(tasks[chosen["pollution"]]["format_pollution"]) is not None
    assert json.loads(rows[chosen["hallucination"]]["hallucination_findings"])
    # Denominator = all tasks: the empty reply counts as an Exec failure; only the clean reply renders.
    assert sum(g["tasks"] for g in summary["groups"]) == len(chosen)
    assert sum(g["exec_ok"] for g in summary["groups"]) == 1


def test_play_hashing_setting_reaches_the_render_config(tmp_path):
    from prism_fast.pipeline.run import options_from_config

    assert options_from_config(compose_config(f"runs_root={tmp_path}")).render.play_hashing is False
    on = options_from_config(compose_config(f"runs_root={tmp_path}", "execute.play_hashing=true"))
    assert on.render.play_hashing is True
    cfg = compose_config(f"runs_root={tmp_path}")
    assert cfg.profile_render.play_hashing is True  # profile-render times the authors' command by default


def test_text_boxes_are_recorded_only_where_padvc_reads_them(tmp_path):
    """``execute.text_boxes`` null (default): renders record text boxes only for a PADVC stage with the ``scene`` OCR
    backend (explicitly, or improved's default); the resolved value is an exec setting, so rows rendered without
    them are stale for a run that reads them."""
    from prism_fast.pipeline.run import options_from_config
    from prism_fast.pipeline.settings import stage_settings

    def opts(*overrides):
        return options_from_config(compose_config(f"runs_root={tmp_path}", *overrides))

    default = opts()
    assert default.render.text_boxes is False
    assert opts("metrics.padvc.enabled=true").render.text_boxes is False  # reference: RapidOCR masks
    scene = opts("metrics.padvc.enabled=true", "metrics.padvc.ocr_backend=scene")
    assert scene.render.text_boxes is True
    assert opts("metrics.padvc.enabled=false", "metrics.padvc.ocr_backend=scene").render.text_boxes is False
    assert opts("profile=improved", "metrics.padvc.enabled=true").render.text_boxes is True  # Q-PADVC-15
    assert opts("profile=improved", "metrics.padvc.enabled=true",
                "metrics.padvc.ocr.scene_masks=off").render.text_boxes is False
    assert opts("metrics.padvc.enabled=true", "metrics.padvc.ocr.reuse=text").render.text_boxes is True  # OCR reuse
    assert opts("execute.text_boxes=true").render.text_boxes is True
    assert opts("execute.text_boxes=false", "metrics.padvc.enabled=true",
                "metrics.padvc.ocr_backend=scene").render.text_boxes is False
    exec_of = {name: stage_settings(o, "env")["exec"]["en"] for name, o in (("default", default), ("scene", scene))}
    assert exec_of["default"]["execute.text_boxes"] is False and exec_of["scene"]["execute.text_boxes"] is True
    assert {k: v for k, v in exec_of["default"].items() if k != "execute.text_boxes"} == \
        {k: v for k, v in exec_of["scene"].items() if k != "execute.text_boxes"}


def test_the_driver_resolves_its_options_without_torch(tmp_path):
    """Everything the driver does before its head start renders -- composing the config and resolving the options,
    text boxes included (they read the PADVC stage's OCR settings) -- imports neither torch nor prism_kernels: a
    torch import is ≈ 2.5 s before the first render (issue #19 item 4). Checked in a fresh interpreter, for the
    reference default and for PADVC on under both profiles."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from hydra import compose, initialize_config_module\n"
        "from prism_fast.pipeline.run import options_from_config\n"
        "out = []\n"
        "for extra in ([], ['metrics.padvc.enabled=true'], ['profile=improved', 'metrics.padvc.enabled=true']):\n"
        "    with initialize_config_module(config_module='prism_fast.conf', version_base=None):\n"
        f"        cfg = compose(config_name='config', overrides=['runs_root={tmp_path}', *extra])\n"
        "    out.append(options_from_config(cfg).render.text_boxes)\n"
        "print(json.dumps({'boxes': out, 'torch': 'torch' in sys.modules, 'kernels': 'prism_kernels' in sys.modules}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["boxes"] == [False, False, True]  # the options were resolved, improved's PADVC reads text boxes
    assert got["torch"] is False and got["kernels"] is False
