"""prism_fast.pipeline stage."""
