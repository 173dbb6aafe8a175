"""The bundled bilingual sample set (package data).

Sources live in ``data/samples/<lang>/<id>.md`` (teaching outline) and ``<id>.py`` (reference answer); the
released-schema JSONL ``data/prism_sample.jsonl`` is generated from them with::

    python -m prism_fast.dataset.bundled

and a test keeps the two in sync.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

from prism_fast.dataset.loader import LANGUAGES
from prism_fast.dataset.templates import build_instruction

DATA_DIR = Path(str(resources.files("prism_fast.dataset") / "data"))
SAMPLES_DIR = DATA_DIR / "samples"
BUNDLED_JSONL = DATA_DIR / "prism_sample.jsonl"


def bundled_dataset_path() -> Path:
    if not BUNDLED_JSONL.is_file():
        raise FileNotFoundError(f"bundled sample set missing: {BUNDLED_JSONL} (python -m prism_fast.dataset.bundled)")
    return BUNDLED_JSONL


def build_records(samples_dir: Path = SAMPLES_DIR) -> list[dict]:
    """Released-schema records from the sources, ordered by language then id."""
    records = []
    for lang in LANGUAGES:
        for md in sorted((samples_dir / lang).glob("*.md")):
            script = md.with_suffix(".py")
            if not script.is_file():
                raise FileNotFoundError(f"{md} has no reference answer {script.name}")
            records.append(
                {
                    "id": md.stem,
                    "language": lang,
                    "instruction": build_instruction(md.read_text(encoding="utf-8"), lang),
                    "reference_answer": script.read_text(encoding="utf-8"),
                }
            )
    return records


def render_jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main() -> int:
    text = render_jsonl(build_records())
    BUNDLED_JSONL.write_text(text, encoding="utf-8")
    print(f"wrote {text.count(chr(10))} rows to {BUNDLED_JSONL}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
