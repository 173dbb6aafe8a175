"""prism_fast: a fast, parity-first batch evaluator for the PRISM benchmark."""

__version__ = "0.1.0"
