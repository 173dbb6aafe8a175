"""prism_fast.report stage."""
