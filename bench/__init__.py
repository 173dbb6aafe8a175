"""Benchmarks and the per-frame NumPy/OpenCV oracle (test and benchmark support, not part of the package)."""
