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
from prism_fast.doctor import DEGRADED, MISSING, OK

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

def test_cli_prints_every_line(tmp_path):
    out_json = tmp_path / "doctor.json"
    proc = subprocess.run([sys.executable, "-m", "prism_fast.cli", "doctor", "+doctor.render=false",
                           f"+doctor.json={out_json}", f"runs_root={tmp_path}/runs", f"hydra.run.dir={tmp_path}/h"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = {line.split()[1]: line.split()[0] for line in proc.stdout.splitlines()
             if line and not line.startswith((" ", "prism-fast doctor"))}
    assert lines == {"build": OK, "manim": OK, "tex": OK, "fonts": OK, "torch": DEGRADED, "gpu_decoder": DEGRADED,
                     "yuv_parity": OK, "ocr_ort": DEGRADED, "embeddings": MISSING, "sandbox": OK, "ray": OK,
                     "disk": OK, "shm": OK}, proc.stdout + proc.stderr
    assert proc.returncode == 1   # something is missing (the paper's embedding models are not bundled)
    assert out_json.is_file()
