"""Metric rows on a GPU == metric rows on the CPU, on real renders, across machines.

A GPU machine may lack Manim (and the pinned OpenCV), so the CPU side is recorded where the project is installed
and checked where the GPU is:

    # here (CPU, the pinned stack): renders of a run (each ``<id>.mp4`` with its ``<id>.textboxes.json``)
    .venv/bin/python -m bench.gpu_parity record --videos RUN_DIR/models/reference/videos --out expected.json
    # on the GPU machine, the same files next to the json
    python -m bench.gpu_parity check --videos DIR --expected expected.json --device cuda --decoders yuv,nvdec

``record``: per video, the sha256 of OpenCV's BGR frames (the toolkit's decoder), the TD_raw row and the PADVC
details (scene text masks from the render's record, a fixed PVD) on the CPU path. ``check``: the same per
decoder on ``--device``: frames (sha256 of the decoded BGR frames, moved to the host), TD row and PADVC details
must be equal, field for field; it prints one line per video and decoder and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

PVD_RAW = 0.5   # any fixed PVD: energies, events and the score's other factors do not depend on it

TD_FIELDS = ("td_raw", "status", "fps", "container_frame_count", "decoded_frame_count", "pair_count", "ratio_sum")


def _jsonable(value):
    if isinstance(value, float):
        return repr(value) if not math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return _jsonable(value.item())
    return value


def frames_sha256(path: Path, decoder: str, device: str) -> tuple[str, int, dict]:
    from prism_fast.video.decode import VideoFrames

    vf = VideoFrames(path, decoder=decoder, device=device)
    h, n = hashlib.sha256(), 0
    if decoder == "opencv":
        for frame in vf.iter_frames():
            h.update(frame.tobytes())
            n += 1
    else:
        for chunk in vf:
            host = chunk.cpu().contiguous().numpy()
            h.update(host.tobytes())
            n += host.shape[0]
    return h.hexdigest(), n, vf.fields()


def td_row(path: Path, decoder: str, device: str) -> dict:
    from prism_fast.metrics.td import compute_td_raw

    raw = compute_td_raw(path, decoder=decoder, device=device)
    return {f: _jsonable(getattr(raw, f)) for f in TD_FIELDS} | {"decoder": raw.decoder}


def padvc_details(path: Path, decoder: str, device: str) -> dict:
    from prism_fast.execute.textboxes import load_sidecar
    from prism_fast.metrics.padvc import compute_padvc_details
    from prism_fast.video.ocr import OcrSettings, SceneTextMasker

    boxes, why = load_sidecar(path)
    if boxes is None:
        return {"_skipped": why}
    settings = OcrSettings(backend="scene")
    out = compute_padvc_details(path, SimpleNamespace(pvd_raw=PVD_RAW), SceneTextMasker(boxes, settings),
                                decoder=decoder, device=device)
    return {k: _jsonable(v) for k, v in sorted(out.items()) if k not in ("decoder", "_timings", "timings")}


def _videos(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.mp4") if p.is_file())


def record(args) -> int:
    out = {}
    for path in _videos(Path(args.videos)):
        sha, n, _ = frames_sha256(path, "opencv", "cpu")
        out[path.name] = {"frames_sha256": sha, "frames": n, "td": td_row(path, "opencv", "cpu"),
                          "padvc": padvc_details(path, "opencv", "cpu")}
        print(f"{path.name}: {n} frames, td_raw={out[path.name]['td']['td_raw']}", flush=True)
    import cv2
    import torch

    doc = {"recorded_with": {"opencv": cv2.__version__, "torch": torch.__version__}, "videos": out}
    Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    print(f"wrote {args.out}: {len(out)} videos")
    return 0 if out else 1


def _diff(a: dict, b: dict, skip=("decoder", "decoder_fallback", "_decoder", "_decoder_fallback")) -> list[str]:
    keys = sorted(set(a) | set(b))
    return [f"{k}: {a.get(k)!r} != {b.get(k)!r}" for k in keys if k not in skip and a.get(k) != b.get(k)]


def check(args) -> int:
    import torch

    doc = json.loads(Path(args.expected).read_text(encoding="utf-8"))
    folder, bad, lines = Path(args.videos), 0, 0
    print(f"recorded with {doc['recorded_with']}; checking with torch {torch.__version__} on {args.device}"
          + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else ""), flush=True)
    for name, exp in sorted(doc["videos"].items()):
        path = folder / name
        for decoder in args.decoders.split(","):
            t0 = time.perf_counter()
            sha, n, fields = frames_sha256(path, decoder, args.device)
            problems = []
            if fields.get("decoder") != decoder:
                problems.append(f"decoder used {fields.get('decoder')!r} ({fields.get('decoder_fallback')})")
            if (sha, n) != (exp["frames_sha256"], exp["frames"]):
                problems.append(f"frames differ ({n} vs {exp['frames']} frames)")
            problems += [f"td {d}" for d in _diff(td_row(path, decoder, args.device), exp["td"])]
            got_padvc = padvc_details(path, decoder, args.device)
            problems += [f"padvc {d}" for d in _diff(_jsonable(json.loads(json.dumps(got_padvc))), exp["padvc"])]
            lines += 1
            bad += bool(problems)
            print(f"{'OK  ' if not problems else 'DIFF'} {name} {decoder}@{args.device}: {n} frames, "
                  f"td_raw={exp['td']['td_raw']}, padvc keys={len(exp['padvc'])} "
                  f"({time.perf_counter() - t0:.2f} s)" + "".join(f"\n     {p}" for p in problems[:8]), flush=True)
    print(f"{lines - bad}/{lines} identical")
    return 0 if lines and not bad else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--videos", required=True)
    r.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--videos", required=True)
    c.add_argument("--expected", required=True)
    c.add_argument("--device", default="cuda")
    c.add_argument("--decoders", default="yuv,nvdec")
    args = ap.parse_args(argv)
    return record(args) if args.cmd == "record" else check(args)


if __name__ == "__main__":
    sys.exit(main())
