"""TD metric: spec goldens, kernel path vs the per-frame oracle on a real render, quirk switches, fit."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from bench import oracle
from prism_fast.metrics import td
from prism_fast.profile import IMPROVED, REFERENCE, resolve_profile
from prism_kernels import changed_pixel_counts

ZH = td.TDParams(-3.6128059890794395, 0.5952279192727674, 9.807249641469183e-05, "paper:zh")
EN = td.TDParams(-3.4075, 0.4680, 4.71e-3, "paper:en")

SCENE = '''
from manim import *

class TDClip(Scene):
    def construct(self):
        dots = VGroup(*[Dot(point=[x, 0, 0], color=RED) for x in range(-3, 4)])
        self.play(FadeIn(dots), run_time=0.5)
        self.play(dots.animate.arrange_in_grid(2, 4).scale(2), run_time=0.7)
        self.wait(0.4)
        self.play(Rotate(dots, PI / 3), run_time=0.5)
'''


@pytest.fixture(scope="module")
def td_video(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("td_render")
    (work / "scene.py").write_text(SCENE)
    proc = subprocess.run([sys.executable, "-m", "manim", "-ql", "--disable_caching", "--media_dir",
                           str(work / "media"), "-o", "TDClip.mp4", "scene.py", "TDClip"],
                          cwd=work, capture_output=True, text=True, timeout=300)
    videos = list((work / "media").rglob("TDClip.mp4"))
    assert proc.returncode == 0 and videos, proc.stderr[-2000:]
    return videos[0]


# --- spec goldens (td.md §7) --------------------------------------------------------------------------

def _golden_grays() -> np.ndarray:
    g = np.zeros((4, 480, 854), dtype=np.uint8)
    g[1, 100:200, 100:200] = 26
    g[2] = g[1]
    g[3, 400:448, :] = 25          # a band changing by exactly τ: not counted
    return g


def test_golden_td_raw():
    g = _golden_grays()
    counts = changed_pixel_counts(torch.from_numpy(g), 25)
    assert counts.tolist() == [10000, 0, 10000]
    got = td.td_raw_from_counts(counts, 480 * 854, fps=15.0, container_frame_count=4, decoded_frame_count=4)
    assert got.status == "ok" and got.pair_count == 3
    assert got.ratio_sum == pytest.approx(0.0487900078, abs=1e-10)
    assert got.td_raw == pytest.approx(0.2439500390, abs=1e-10)
    assert got.td_raw == oracle.td_raw_from_grays(list(g), 4, 15.0)   # bit-identical to the per-frame path


def test_plain_change_ratios_are_the_kernel_division_bit_for_bit():
    """The torch-free ratios of a CPU TD_raw (``plain_change_ratios``) against ``prism_kernels.change_ratios`` on
    counts over the whole range a frame allows, at the -ql size and odd sizes, compared as float64 bit patterns."""
    from prism_kernels import change_ratios

    gen = torch.Generator().manual_seed(19)
    for h, w in ((480, 854), (1080, 1920), (7, 13), (1, 1)):
        pixels = h * w
        counts = torch.cat([torch.randint(0, pixels + 1, (4000,), generator=gen, dtype=torch.int64),
                            torch.tensor([0, 1, pixels - 1, pixels, pixels // 2, pixels // 3], dtype=torch.int64)])
        kernel = change_ratios(counts, pixels)
        plain = torch.tensor(td.plain_change_ratios(counts.tolist(), pixels), dtype=torch.float64)
        assert torch.equal(plain.view(torch.int64), kernel.view(torch.int64))
        kw = dict(fps=15.0, container_frame_count=len(counts) + 1, decoded_frame_count=len(counts) + 1)
        assert td.td_raw_from_counts(counts.tolist(), pixels, **kw) == td.td_raw_from_counts(counts, pixels, **kw)
    with pytest.raises(ValueError):
        td.plain_change_ratios([1], 0)


@pytest.mark.parametrize("raw, z_zh, c_zh, z_en, c_en", [
    (0.0, -9.436717, 4.59921e-20, -4.167879, 1.69001e-4),
    (0.01, -1.650804, 0.256000, -1.734461, 0.222200),
    (0.05, 1.039994, 0.582286, 1.072203, 0.562812),
    (0.1, 2.202856, 0.0883644, 2.459272, 0.0486059),
    (0.3, 4.047458, 2.77148e-4, 4.741678, 1.3115e-5),
])
def test_golden_center_table(raw, z_zh, c_zh, z_en, c_en):
    for params, z_exp, c_exp in ((ZH, z_zh, c_zh), (EN, z_en, c_en)):
        c, z = td.td_center(raw, params.mu, params.sigma, params.eps)
        assert z == pytest.approx(z_exp, abs=1e-6)
        assert c == pytest.approx(c_exp, rel=5e-5)
        assert (c, z) == oracle.td_center(raw, params.mu, params.sigma, params.eps)


def test_golden_peaks_and_utd():
    for params, peak in ((ZH, 0.0268780), (EN, 0.0284139)):
        x = math.exp(params.mu) - params.eps
        assert x == pytest.approx(peak, abs=1e-7)
        assert td.td_center(x, params.mu, params.sigma, params.eps)[0] == pytest.approx(1.0, abs=1e-15)
    row = td.build_td_row({"render_success": True, "visual_structure_rate": 0.5},
                          td.TDRaw(0.05, "ok"), ZH)
    assert row["u_td"] == pytest.approx(0.291143, abs=1e-6)


# --- a real render: kernels vs oracle -----------------------------------------------------------------

@pytest.mark.parametrize("decoder, chunk, backend", [("opencv", 64, "cv2"), ("opencv", 5, "torch"),
                                                     ("decord", 16, "torch"), ("pyav", 7, "auto")])
def test_td_raw_on_render_equals_oracle(td_video, decoder, chunk, backend):
    expected = oracle.td_raw_video(str(td_video))
    got = td.compute_td_raw(td_video, decoder=decoder, chunk_size=chunk, signal_backend=backend)
    assert got.status == "ok" and got.decoder == decoder
    assert got.td_raw > 0
    assert got.td_raw == expected          # bit-identical, not just close
    assert got.decoded_frame_count == got.container_frame_count == got.pair_count + 1


def test_improved_denominator_uses_decoded_pairs():
    counts = torch.tensor([409920, 0, 204960], dtype=torch.int64)   # ratios 1, 0, 0.5
    kw = dict(fps=15.0, decoded_frame_count=4)
    ref = td.td_raw_from_counts(counts, 409920, container_frame_count=9, **kw)
    imp = td.td_raw_from_counts(counts, 409920, container_frame_count=9, profile=IMPROVED, **kw)
    assert ref.td_raw == 1.5 / ((9 - 1) / 15.0)      # Q-TD-1 reference: container N = 9
    assert imp.td_raw == 15.0 * 1.5 / 3               # improved: 3 decoded pairs
    zero = td.td_raw_from_counts(counts, 409920, container_frame_count=1, **kw)
    assert (zero.td_raw, zero.status) == (0.0, "zero_duration")


def test_sequential_sum_is_not_compensated():
    vals = [1.0, 1e-16, 1e-16, 1e-16, 1e-16]
    assert td.sequential_sum(vals) == 1.0 and math.fsum(vals) != 1.0


def test_zero_duration_video(tmp_path):
    path = tmp_path / "one_frame.mp4"
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 15.0, (64, 48))
    w.write(np.full((48, 64, 3), 200, dtype=np.uint8))
    w.release()
    got = td.compute_td_raw(path)
    assert (got.td_raw, got.status) == (0.0, "zero_duration") and oracle.td_raw_video(str(path)) == 0.0


# --- rows and quirks ----------------------------------------------------------------------------------

BASE = {"id": "t1", "source_id": "s1", "difficulty": None, "difficulty_score": None, "render_success": True,
        "visual_structure_pass": 1, "visual_structure_rate": 0.75, "padvc_raw": 0.4, "u_padvc": 0.4}


def test_scored_row_fields_and_order(td_video):
    row = td.score_td_row({**BASE, "video_path": str(td_video)}, ZH)
    assert list(row)[:15] == ["id", "source_id", "difficulty", "difficulty_score", "render_success",
                              "visual_structure_pass", "visual_structure_rate", "video_path", "td_raw",
                              "td_center", "td_center_z", "u_td", "padvc_raw", "u_padvc", "profile"]
    assert row["td_raw"] == oracle.td_raw_video(str(td_video))
    c, z = oracle.td_center(row["td_raw"], ZH.mu, ZH.sigma, ZH.eps)
    assert (row["td_center"], row["td_center_z"], row["u_td"]) == (c, z, c * 0.75)
    assert (row["status"], row["error_kind"], row["profile"], row["params_source"]) == ("ok", None,
                                                                                      "reference", "paper:zh")
    assert "td_status" not in row


@pytest.mark.parametrize("patch, kind", [({"render_success": False}, "render_failed"),
                                         ({"video_path": None}, "video_path_missing"),
                                         ({"video_path": "/nonexistent/x.mp4"}, "video_file_missing")])
def test_missing_video_reference_vs_improved(patch, kind):
    base = {**BASE, "video_path": "/nonexistent/x.mp4", **patch}
    ref = td.score_td_row(base, ZH)
    assert ref["td_raw"] == 0.0 and ref["td_center"] == pytest.approx(4.59921e-20, rel=1e-5)  # Q-TD-2
    assert (ref["status"], ref["error_kind"]) == ("no_video", kind)
    fitted = td.TDParams(-3.5, 0.6, 1e-4, "fit:test", frozenset(td.TD_FIT_SENSITIVE))
    imp = td.score_td_row(base, fitted, profile=IMPROVED)
    assert (imp["td_raw"], imp["td_center"], imp["td_center_z"], imp["u_td"]) == (None, None, None, 0.0)
    assert imp["td_status"] == "no_video" and imp["status"] == "no_video"


def test_improved_refuses_paper_params():
    with pytest.raises(ValueError, match="refit the reference answers"):
        td.score_td_row({**BASE, "render_success": False}, ZH, profile=IMPROVED)
    only_td2 = resolve_profile("reference", {"Q-TD-2": True})   # does not change raw values or the fit
    assert td.score_td_row({**BASE, "render_success": False}, ZH, profile=only_td2)["td_raw"] is None


def test_params_implicit_eps_q_td_4():
    p = td.td_params_from_json({"mu": -3.0, "sigma": 0.5})
    assert p.eps == 9.807249641469183e-05 and "implicit_eps" in p.source
    with pytest.raises(KeyError, match="Q-TD-4"):
        td.td_params_from_json({"mu": -3.0, "sigma": 0.5}, profile=IMPROVED)
    with pytest.raises(KeyError, match="'sigma'"):
        td.td_params_from_json({"mu": -3.0})


def test_summary_subsets_median_and_bins():
    rows = [td.build_td_row({**BASE, "id": str(i), "difficulty": d, "visual_structure_pass": vp},
                            td.TDRaw(raw, "ok"), ZH)
            for i, (raw, d, vp) in enumerate([(0.0268780, "easy", 1), (0.01, "easy", 0), (0.05, "hard", 1),
                                               (0.3, None, 0)])]
    s = td.make_td_summary(rows, ZH, 25, "in.jsonl", "out.jsonl")
    assert s["overall"]["count"] == 4
    assert s["overall"]["median_td_raw"] == (0.0268780 + 0.05) / 2     # even count: mean of the middle two
    assert s["by_difficulty"]["easy"]["count"] == 2 and s["by_difficulty"]["medium"]["mean_td_raw"] == 0.0
    assert s["visual_fail"]["count"] == 2
    bins = {tuple(b["range"]): b["count"] for b in s["td_center_bins"]}
    # centers ≈ 1.0, 0.256, 0.582, 0.000277: the peak falls in the closed last bin
    assert bins == {(0.0, 0.2): 1, (0.2, 0.4): 1, (0.4, 0.6): 1, (0.6, 0.8): 0, (0.8, 1.0): 1}


# --- reference fit (td.md §5) -------------------------------------------------------------------------

RECORDS = [{"status": "ok", "td_raw": v} for v in (0.0, 0.02, 0.05, 0.0, 0.01, 0.3)] + \
          [{"status": "error", "error": "FileNotFoundError: video missing"}]


def test_fit_reference_keeps_zeros():
    fit = td.fit_td_reference(RECORDS)
    raws = np.array([0.0, 0.02, 0.05, 0.0, 0.01, 0.3])
    logs = np.log(raws + 0.01)                       # eps = smallest positive td_raw
    assert fit["eps"] == 0.01
    assert (fit["total_records"], fit["success_records"], fit["failed_records"], fit["sample_count"]) == (7, 6, 1, 6)
    assert fit["mu"] == pytest.approx(logs.mean(), rel=1e-12)
    assert fit["sigma"] == pytest.approx(logs.std(ddof=0), rel=1e-12)
    assert fit["raw_p25"] == np.percentile(raws, 25) and fit["log_max"] == logs.max()
    assert "zero_count" not in fit


def test_fit_improved_excludes_zeros():
    fit = td.fit_td_reference(RECORDS, profile=IMPROVED)
    logs = np.log(np.array([0.02, 0.05, 0.01, 0.3]) + 0.01)
    assert fit["eps"] == 0.01 and fit["zero_count"] == 2 and fit["fit_count"] == 4
    assert fit["mu"] == pytest.approx(logs.mean(), rel=1e-12)
    assert fit["sigma"] == pytest.approx(logs.std(ddof=0), rel=1e-12)
    p = td.params_from_fit(fit, profile=IMPROVED, source="fit:test")
    td.check_params_for_profile(p, IMPROVED)         # accepted under the profile it was fitted with
    with pytest.raises(ValueError):
        td.check_params_for_profile(p, REFERENCE)


def test_fit_edge_cases():
    fit = td.fit_td_reference([{"status": "ok", "td_raw": 0.0}, {"status": "ok", "td_raw": 0.0}])
    assert fit["eps"] == 1e-8 and fit["sigma"] == 1e-12 and fit["mu"] == math.log(1e-8)
    with pytest.raises(ValueError, match="nothing to fit"):
        td.fit_td_reference([{"status": "error"}])


def test_reference_record(td_video, tmp_path):
    rec = td.reference_record({"id": "TDClip", "language": "zh"}, td_video.parent)
    assert rec["status"] == "ok" and rec["td_raw"] == oracle.td_raw_video(str(td_video))
    missing = td.reference_record({"id": "nope", "video_path": str(tmp_path / "x.mp4")}, tmp_path)
    assert missing == {"id": "nope", "source_id": None, "language": None, "video_path": None,
                       "status": "error", "error": "FileNotFoundError: video missing"}
