"""prism_fast.metrics stage."""
