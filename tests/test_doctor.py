"""`prism-fast doctor`: every line, on this machine (CPU only, no GPU decoder, ORT CPU, sandbox namespaces as
root) and on the other side of each line through the check functions' arguments (no mocks): e.g. a PATH
without latex says what breaks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prism_fast import doctor
from prism_fast.doctor import DEGRADED, MISSING, OK, OPTIONAL

ROOT = Path(__file__).resolve().parents[1]
TEX_NAMES = ("latex", "pdflatex", "xelatex", "lualatex", "tex", "dvisvgm", "kpsewhich", "dvipdfmx", "etex")


@pytest.fixture(scope="module")
def path_without_tex(tmp_path_factory) -> str:
    """A PATH holding every tool of the system's bin directories except TeX's (symlinks)."""
    bin_dir = tmp_path_factory.mktemp("notex_bin")
    for src in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in Path(src).iterdir() if Path(src).is_dir() else ():
            if tool.name in TEX_NAMES or "tex" in tool.name or (bin_dir / tool.name).exists():
                continue
            (bin_dir / tool.name).symlink_to(tool)
    return str(bin_dir)


# --- build, manim ---------------------------------------------------------------------------------------------

def test_build_line():
    from prism_fast import buildinfo

    commit = buildinfo.git_commit()
    assert commit and doctor.check_build("0.1.0", commit).status == OK   # a git checkout here
    line = doctor.check_build("0.1.0", None)
    assert line.status == DEGRADED and "git_commit null" in line.consequence
    assert "PRISM_FAST_GIT_COMMIT" in line.fix


def test_buildinfo_sources(tmp_path):
    from prism_fast import buildinfo

    baked = tmp_path / "_build_commit.txt"
    no_repo = tmp_path / "norepo"
    no_repo.mkdir()
    assert buildinfo.git_commit({}, baked, no_repo) is None
    baked.write_text("ABCDEF1234567\n")
    assert buildinfo.git_commit({}, baked, no_repo) == "abcdef1234567"
    assert buildinfo.git_commit({"PRISM_FAST_GIT_COMMIT": "0123456789"}, baked, no_repo) == "0123456789"
    assert buildinfo.git_commit({"PRISM_FAST_GIT_COMMIT": "unknown"}, tmp_path / "none", no_repo) is None


def test_manim_line():
    assert doctor.check_manim("0.19.0").status == OK
    assert doctor.check_manim("0.18.1").status == DEGRADED
    assert doctor.check_manim(None).status == MISSING


# --- TeX, fonts, render ------------------------------------------------------------------------------------------

def test_tex_line_here_and_without_tex(path_without_tex):
    assert doctor.check_tex(doctor.probe_tex(os.environ["PATH"])).status == OK
    line = doctor.check_tex(doctor.probe_tex(path_without_tex))
    assert line.status == MISSING and "latex" in line.summary and "dvisvgm" in line.summary
    assert "Tex/MathTex scene fails" in line.consequence and "install_system_deps.sh" in line.fix


def test_fonts_line(path_without_tex, tmp_path):
    assert doctor.check_fonts(doctor.probe_fonts(os.environ["PATH"])).status == OK
    missing = doctor.probe_fonts(os.environ["PATH"], ("DejaVu Sans", "No Such Font Family"))
    line = doctor.check_fonts(missing)
    assert line.status == DEGRADED and "No Such Font Family" in line.summary and "geometry" in line.consequence
    assert doctor.check_fonts(doctor.probe_fonts(str(tmp_path))).status == MISSING   # no fc-list on that PATH


@pytest.mark.slow
def test_render_line_here_and_without_tex(path_without_tex):
    here = doctor.check_render(doctor.probe_render(dict(os.environ)))
    assert here.status == OK and "sandbox namespaces" in here.summary, here
    env = dict(os.environ, PATH=path_without_tex)
    result = doctor.probe_render(env)
    assert result["mathtex"]["success"] is False and result["cjk_text"]["success"] is True, result
    line = doctor.check_render(result)
    assert line.status == MISSING and "mathtex" in line.summary
    assert "MathTex/Tex scenes fail" in line.consequence and "Chinese" not in line.consequence


# --- torch, decoder, exact YUV, ORT, embeddings -------------------------------------------------------------------

def test_torch_line_reports_cpu_only_here():
    facts = doctor.probe_torch()
    assert facts["cuda_available"] is False
    line = doctor.check_torch(facts)
    assert line.status == DEGRADED and "CPU only" in line.summary and "identical numbers" in line.consequence
    gpu = doctor.check_torch({"version": "2.14.1", "cuda_build": "13.0", "cuda_available": True,
                              "devices": ["NVIDIA H200", "NVIDIA H200"]})
    assert gpu.status == OK and "2 × NVIDIA H200" in gpu.summary


def test_gpu_decoder_line_reports_none_here():
    from prism_fast.video.decode import nvdec_status

    ok, detail = nvdec_status()
    assert ok is False and "PyNvVideoCodec" in detail
    line = doctor.check_gpu_decoder(ok, detail, False)
    assert line.status == DEGRADED and "no GPU decoder" in line.summary and "identical numbers" in line.consequence
    assert doctor.check_gpu_decoder(True, "PyNvVideoCodec 2.2.4", True).status == OK
    assert doctor.check_gpu_decoder(True, "PyNvVideoCodec 2.2.4", False).status == DEGRADED


def test_yuv_parity_line():
    from prism_fast.video.yuv import host_selftest

    check = host_selftest()
    assert doctor.check_yuv_parity(check.identical, check.max_abs_diff, check.differing_fraction,
                                   check.detail).status == OK
    line = doctor.check_yuv_parity(False, 1, 0.3, "2 frames")
    assert line.status == DEGRADED and "metrics.decoder=opencv" in line.fix


def test_ort_line_reports_cpu_here():
    facts = doctor.probe_ort(doctor.rapidocr_model())
    assert doctor.rapidocr_model() is not None
    assert facts["ort"] and not facts["ort_gpu"] and "CUDAExecutionProvider" not in facts["available"]
    line = doctor.check_ort(facts)
    assert line.status == DEGRADED and "CPU providers only" in line.summary and "ocr_provider=cpu" in line.consequence
    both = doctor.check_ort({"ort": "1.32.0", "ort_gpu": "1.31.1", "available": ["CPUExecutionProvider"]})
    assert both.status == DEGRADED and "pip uninstall -y onnxruntime" in both.fix
    broken = doctor.check_ort({"ort": None, "ort_gpu": "1.31.1", "session": "CPUExecutionProvider",
                               "available": ["CUDAExecutionProvider", "CPUExecutionProvider"],
                               "error": None})
    assert broken.status == DEGRADED and "did not load" in broken.summary
    good = doctor.check_ort({"ort": None, "ort_gpu": "1.31.1", "session": "CUDAExecutionProvider",
                             "available": ["CUDAExecutionProvider", "CPUExecutionProvider"]})
    assert good.status == OK
    assert doctor.check_ort({"available": [], "error": "ImportError"}).status == MISSING


def test_embeddings_line(tmp_path):
    facts = doctor.probe_embeddings(None, None, str(tmp_path))
    line = doctor.check_embeddings(facts)
    assert line.status == MISSING and "PADVC" in line.consequence and "TD" in line.consequence
    zh, en = tmp_path / "zh", tmp_path / "en"
    zh.mkdir()
    en.mkdir()
    assert doctor.check_embeddings(doctor.probe_embeddings(str(zh), str(en), None)).status == OK
    assert doctor.check_embeddings({"sentence_transformers": None, "zh": None, "en": None}).status == MISSING


# --- sandbox, Ray, disk, shm ----------------------------------------------------------------------------------------

def test_sandbox_line_reports_namespaces_as_root_here():
    from prism_fast.execute.sandbox import host_isolation

    host = host_isolation()
    assert os.geteuid() == 0 and host.level == "namespaces"
    assert doctor.check_sandbox(host.level, host.is_root, []).status == OK
    assert doctor.check_sandbox("bwrap", False, []).status == OK
    line = doctor.check_sandbox("none", True, ["mount namespace", "PID namespace"])
    assert line.status == MISSING and "refused" in line.consequence
    assert "--cap-add SYS_ADMIN" in line.fix and "bubblewrap" in line.fix


def test_ray_line(tmp_path):
    facts = doctor.probe_ray({}, tmp_path)
    assert facts["version"] and facts["running"] is None
    assert "embedded local Ray" in doctor.check_ray(facts, None).summary
    assert doctor.check_ray(facts, "auto").status == MISSING       # cluster=ray, nothing to join
    (tmp_path / "ray_current_cluster").write_text("10.0.0.5:6379\n")
    joined = doctor.check_ray(doctor.probe_ray({}, tmp_path), "auto")
    assert joined.status == OK and "would join 10.0.0.5:6379" in joined.summary
    env = doctor.check_ray(doctor.probe_ray({"RAY_ADDRESS": "ray://head:10001"}, tmp_path), "auto")
    assert "ray://head:10001" in env.summary
    assert doctor.check_ray({"version": None}, None).status == MISSING


def test_disk_and_shm_lines():
    gib = doctor.GIB
    assert doctor.check_disk("/x", 50 * gib).status == OK
    assert doctor.check_disk("/x", 5 * gib).status == DEGRADED
    assert doctor.check_disk("/x", gib // 2).status == MISSING
    assert doctor.check_shm(doctor.shm_size()).status == OK          # 24 GB tmpfs here
    small = doctor.check_shm(64 << 20)                                # Docker's default
    assert small.status == DEGRADED and "--shm-size" in small.fix
    assert doctor.check_shm(doctor.shm_size("/no/such/shm")).status == DEGRADED


# --- the command ------------------------------------------------------------------------------------------------------

def _doctor_cli(tmp_path, *args, env=None):
    return subprocess.run([sys.executable, "-m", "prism_fast.cli", "doctor", *args, "+doctor.render=false",
                           f"runs_root={tmp_path}/runs"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)


def _statuses(stdout: str) -> dict[str, str]:
    return {line.split()[1]: line.split()[0] for line in stdout.splitlines()
            if line and not line.startswith((" ", "prism-fast doctor"))}


def test_cli_prints_every_line(tmp_path):
    out_json = tmp_path / "doctor.json"
    proc = _doctor_cli(tmp_path, f"+doctor.json={out_json}")
    lines = _statuses(proc.stdout)
    assert lines == {"build": OK, "manim": OK, "pins": OK, "tex": OK, "fonts": OK, "torch": DEGRADED,
                     "gpu_decoder": DEGRADED, "yuv_parity": OK, "ocr_ort": OPTIONAL, "embeddings": OPTIONAL,
                     "paddleocr": OPTIONAL, "sandbox": OK, "ray": OK, "disk": OK, "shm": OK}, proc.stdout + proc.stderr
    # the default evaluation never loads the embedding models (PADVC is off): this working machine passes
    assert proc.returncode == 0 and "missing" not in proc.stdout, proc.stdout
    assert proc.stdout.startswith("prism-fast doctor (for `eval` with this config): 10 ok, 2 degraded, 3 optional\n")
    assert out_json.is_file()


def test_cli_fails_only_for_what_the_config_uses(tmp_path):
    proc = _doctor_cli(tmp_path, "metrics.padvc.enabled=true")  # PADVC loads the embedding models: not here
    lines = _statuses(proc.stdout)
    assert lines["embeddings"] == MISSING and lines["ocr_ort"] == DEGRADED and lines["paddleocr"] == OPTIONAL
    assert proc.returncode == 1, proc.stdout + proc.stderr


# --- the composed config decides what is missing ---------------------------------------------------------

def _compose(*overrides):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def _setup_py_requirements() -> list[str]:
    """INSTALL_REQUIRES as setup.py writes it (read, not imported: importing runs setup())."""
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "INSTALL_REQUIRES")
    return ast.literal_eval(node.value)


def test_pins_are_the_tested_versions_of_setup_py():
    tested = doctor.tested_pins(_setup_py_requirements())
    assert set(tested) == {"pillow", "av", "opencv-python", "manim"} and tested["av"] == "==13.1.0"
    facts = doctor.probe_pins()
    assert facts["tested"] == tested  # the installed package records setup.py's pins
    assert doctor.check_pins(**facts).status == OK  # this environment is the tested one
    newer = doctor.check_pins(tested, {**facts["installed"], "pillow": "13.0.0", "av": None})
    assert newer.status == DEGRADED and "pillow 13.0.0 (tested <13,>=10)" in newer.summary
    assert "av not installed" in newer.summary and "not comparable" in newer.consequence
    assert "'pillow<13,>=10'" in newer.fix and "'av==13.1.0'" in newer.fix
    assert doctor.check_pins({}, facts["installed"]).status == DEGRADED


def test_needs_follow_the_composed_config():
    default = doctor.needs_from_config(_compose("command=doctor"))
    assert default.command == "eval" and set(default.uses) == {"render", "ray"} and default.endpoint is None
    padvc = doctor.needs_from_config(_compose("metrics.padvc.enabled=true"))
    assert set(padvc.uses) == {"render", "ray", "embeddings", "rapidocr"}
    paddle = doctor.needs_from_config(_compose("metrics.padvc.enabled=true", "metrics.padvc.ocr_backend=paddleocr",
                                               "metrics.padvc.ocr.paddle_model_dir=/models/paddle"))
    assert "paddleocr" in paddle.uses and "rapidocr" not in paddle.uses and paddle.paddle_model_dir == "/models/paddle"
    assert doctor.needs_from_config(_compose("metrics.decoder=decord")).decoder == "decord"
    assert doctor.needs_from_config(_compose("metrics.decoder=decord", "metrics.td.enabled=false")).decoder == "auto"
    assert set(doctor.needs_from_config(_compose("+doctor.command=fit-reference")).uses) == {"embeddings", "rapidocr"}
    assert doctor.needs_from_config(_compose("+doctor.command=report")).uses == {}
    gen = doctor.needs_from_config(_compose("+doctor.command=generate", "model=openai"))
    assert gen.uses == {} and gen.endpoint == {"base_url": "https://api.openai.com/v1", "model_id": "gpt-5-chat",
                                               "api_key_env": "OPENAI_API_KEY"}
    local = doctor.needs_from_config(_compose("+doctor.command=generate", "model=local", "generate.rounds=2"))
    assert local.endpoint["model_id"] is None and "render" in local.uses  # model_id ??? ; self-debugging renders
    with pytest.raises(SystemExit, match="doctor judges one of"):
        doctor.needs_from_config(_compose("+doctor.command=doctor"))


def test_cli_doctor_word_names_the_judged_command():
    from prism_fast.cli import _rewrite_argv

    assert _rewrite_argv(["doctor", "generate", "model=openai"]) == ["command=doctor", "+doctor.command=generate",
                                                                     "model=openai"]
    assert _rewrite_argv(["doctor", "lang=zh"]) == ["command=doctor", "lang=zh"]


def test_judge_marks_what_the_config_does_not_use_optional():
    missing = doctor.Check("embeddings", MISSING, "no local model", "PADVC stops", "PADVC_ZH_MODEL=...")
    degraded = doctor.Check("ocr_ort", DEGRADED, "CPU only", "slower", "pip install .[gpu]")
    always = doctor.Check("disk", MISSING, "0.1 GiB free", "the run fails", "free space")
    eval_default = doctor.Needs()
    judged = doctor.judge([missing, degraded, always], eval_default)
    assert [c.status for c in judged] == [OPTIONAL, OPTIONAL, MISSING]
    assert "not used by `eval`" in judged[0].consequence and "metrics.padvc.enabled=true" in judged[0].consequence
    assert judged[0].fix == missing.fix
    with_padvc = doctor.Needs(uses={"render": "eval", "ray": "eval", "embeddings": "x", "rapidocr": "x"})
    assert [c.status for c in doctor.judge([missing, degraded], with_padvc)] == [MISSING, DEGRADED]
    assert doctor.exit_status(judged) == 1 and doctor.exit_status(judged[:2]) == 0


def _healthy_node_facts() -> dict:
    """What the image (extras gpu,embeddings; no embedding model is bundled; no [paddle]) finds on a healthy GPU
    node started as the Dockerfile says: --gpus all --shm-size=8g --cap-add SYS_ADMIN, a baked git commit."""
    pins = doctor.tested_pins(_setup_py_requirements())
    installed = {"pillow": "12.3.0", "av": "13.1.0", "opencv-python": "4.14.0.94", "manim": "0.19.0"}
    return {
        "build": ("0.1.0", "0123456789abcdef"), "manim": "0.19.0", "pins": {"tested": pins, "installed": installed},
        "tex": {"latex": "/usr/bin/latex", "dvisvgm": "/usr/bin/dvisvgm"},
        "fonts": {"DejaVu Sans": True, "Noto Sans CJK SC": True},
        "render": {"mathtex": {"success": True, "sandbox": "namespaces", "wall_s": 3.1},
                   "cjk_text": {"success": True, "sandbox": "namespaces", "wall_s": 2.0}},
        "torch": {"version": "2.14.1", "cuda_build": "13.0", "cuda_available": True, "devices": ["NVIDIA H100"]},
        "nvdec": (True, "PyNvVideoCodec 2.2.4"), "yuv": (True, 0, 0.0, "2 frames 854×64"),
        "ort": {"ort": None, "ort_gpu": "1.31.1", "session": "CUDAExecutionProvider",
                "available": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
        "embeddings": {"sentence_transformers": "6.2.0", "zh": None, "en": None},
        "paddleocr": doctor.probe_paddleocr(None), "decord": None,
        "sandbox": ("namespaces", True, []), "ray": {"version": "2.60.0", "env_address": None, "running": None},
        "disk": ("/opt", 200 * doctor.GIB), "shm": 8 * doctor.GIB, "endpoint": None,
    }


def _image_default_overrides() -> list[str]:
    """The image's default command (Dockerfile CMD through scripts/docker-entrypoint.sh) as config overrides."""
    import json

    from prism_fast.cli import _rewrite_argv

    cmd = next(line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD "))
    args = json.loads(cmd[len("CMD "):])
    entrypoint = (ROOT / "scripts/docker-entrypoint.sh").read_text()
    assert args[0] == "doctor" and 'doctor) exec prism-fast "$@"' in entrypoint  # = `prism-fast doctor ...`
    return _rewrite_argv(args)


def test_image_default_command_passes_on_a_healthy_node():
    overrides = _image_default_overrides()
    assert overrides[0] == "command=doctor"
    needs = doctor.needs_from_config(_compose(*overrides))
    checks = doctor.checks_from_facts(_healthy_node_facts(), needs)
    by_name = {c.name: c.status for c in checks}
    assert doctor.exit_status(checks) == 0 and MISSING not in by_name.values(), doctor.format_report(checks)
    assert by_name["embeddings"] == OPTIONAL and by_name["paddleocr"] == OPTIONAL
    assert {by_name[n] for n in ("build", "pins", "render", "torch", "gpu_decoder", "ocr_ort", "sandbox", "shm")} == {OK}
    # the same node, asked for PADVC, names what it lacks
    padvc = doctor.checks_from_facts(_healthy_node_facts(), doctor.needs_from_config(
        _compose(*overrides, "metrics.padvc.enabled=true")))
    assert doctor.exit_status(padvc) == 1 and [c.name for c in padvc if c.status == MISSING] == ["embeddings"]


def test_healthy_node_without_sandbox_or_with_nvdec_asked_fails():
    facts = {**_healthy_node_facts(), "sandbox": ("none", True, ["mount namespace", "PID namespace"])}
    checks = doctor.checks_from_facts(facts, doctor.needs_from_config(_compose("command=doctor")))
    assert [c.name for c in checks if c.status == MISSING] == ["sandbox"]
    report_only = doctor.checks_from_facts(facts, doctor.needs_from_config(_compose("+doctor.command=report")))
    assert doctor.exit_status(report_only) == 0  # `report` runs no script
    unsafe = doctor.checks_from_facts(facts, doctor.needs_from_config(_compose("execute.sandbox=unsafe")))
    assert {c.name: c.status for c in unsafe}["sandbox"] == DEGRADED and doctor.exit_status(unsafe) == 0
    no_nvdec = {**_healthy_node_facts(), "nvdec": (False, "PyNvVideoCodec not usable")}
    asked = doctor.checks_from_facts(no_nvdec, doctor.needs_from_config(_compose("metrics.decoder=nvdec")))
    assert [c.name for c in asked if c.status == MISSING] == ["gpu_decoder"]
    auto = doctor.checks_from_facts(no_nvdec, doctor.needs_from_config(_compose()))
    assert {c.name: c.status for c in auto}["gpu_decoder"] == DEGRADED


def test_paddleocr_and_decord_lines(tmp_path):
    here = doctor.probe_paddleocr(None)
    assert here["paddleocr"] is None  # not installed here (extra [paddle])
    line = doctor.check_paddleocr(here)
    assert line.status == MISSING and '.[paddle]' in line.fix
    (tmp_path / "det").mkdir()
    facts = {**doctor.probe_paddleocr(str(tmp_path)), "paddleocr": "2.9.1", "paddlepaddle": "2.6.2"}
    assert facts["det"] and not facts["rec"]
    assert "paddle_model_dir" in doctor.check_paddleocr(facts).fix
    (tmp_path / "rec").mkdir()
    ok = doctor.check_paddleocr({**doctor.probe_paddleocr(str(tmp_path)), "paddleocr": "2.9.1", "paddlepaddle": "2.6.2"})
    assert ok.status == OK
    decord = doctor.probe_decord()
    assert decord["version"] and doctor.check_decord(decord).status == OK  # a pinned dependency, imports here
    assert doctor.check_decord({"version": None, "error": "ImportError: x"}).status == MISSING
    # decord is probed and shown only when selected
    facts = {**_healthy_node_facts(), "decord": {"version": None, "error": "ImportError: libavcodec"}}
    checks = doctor.checks_from_facts(facts, doctor.needs_from_config(_compose("metrics.decoder=decord")))
    assert [c.name for c in checks if c.status == MISSING] == ["decord"]
    assert "decord" not in {c.name for c in doctor.checks_from_facts(_healthy_node_facts(), doctor.Needs())}


# --- generate: the key variable and the endpoint (a local server on 127.0.0.1; no other network) --------------------

GOOD_KEY = "sk-doctor-test-7f3a91"


@pytest.fixture
def models_server():
    """An OpenAI-compatible /v1/models on 127.0.0.1 that accepts the key GOOD_KEY only."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            ok = self.path == "/v1/models" and self.headers.get("Authorization") == "Bearer " + GOOD_KEY
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(b'{"data": []}')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_endpoint_answers_and_key_lines(models_server):
    good = doctor.probe_endpoint(models_server, GOOD_KEY)
    assert good == {"status": 200, "error": None, "key_sent": True}
    assert doctor.check_endpoint(models_server, "m", good).status == OK
    refused = doctor.check_endpoint(models_server, "m", doctor.probe_endpoint(models_server, "bad"))
    assert refused.status == MISSING and "refused the key (HTTP 401" in refused.summary
    keyless = doctor.check_endpoint(models_server, "m", doctor.probe_endpoint(models_server, None))
    assert keyless.status == OK and "HTTP 401" in keyless.summary  # it answers; the key line says what is wrong
    down = doctor.probe_endpoint("http://127.0.0.1:9/v1", None, timeout_s=2)  # discard port: nothing listens
    line = doctor.check_endpoint("http://127.0.0.1:9/v1", "m", down)
    assert down["status"] is None and line.status == MISSING and "did not answer" in line.summary
    assert doctor.check_endpoint(None, None, None).status == MISSING
    assert "model_id" in doctor.check_endpoint(models_server, None, good).summary
    assert doctor.check_api_key(None, False).status == OK
    unset = doctor.check_api_key("PRISM_TEST_KEY", False)
    assert unset.status == MISSING and "export PRISM_TEST_KEY=" in unset.fix
    assert doctor.check_api_key("PRISM_TEST_KEY", True).status == OK


def test_cli_doctor_generate_checks_key_and_endpoint(tmp_path, models_server):
    args = ["generate", "model=local", f"model.endpoint.base_url={models_server}", "model.endpoint.model_id=m",
            "model.endpoint.api_key_env=PRISM_DOCTOR_TEST_KEY"]
    env = {k: v for k, v in os.environ.items() if k != "PRISM_DOCTOR_TEST_KEY"}
    proc = _doctor_cli(tmp_path, *args, env={**env, "PRISM_DOCTOR_TEST_KEY": GOOD_KEY})
    lines = _statuses(proc.stdout)
    assert proc.returncode == 0 and lines["api_key"] == OK and lines["endpoint"] == OK, proc.stdout + proc.stderr
    assert GOOD_KEY not in proc.stdout + proc.stderr  # the key's value is never printed
    assert proc.stdout.startswith("prism-fast doctor (for `generate` with this config)")
    proc = _doctor_cli(tmp_path, *args, env=env)
    lines = _statuses(proc.stdout)
    assert proc.returncode == 1 and lines["api_key"] == MISSING and lines["endpoint"] == OK, proc.stdout
