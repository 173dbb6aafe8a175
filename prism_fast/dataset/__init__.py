"""prism_fast.dataset stage."""
