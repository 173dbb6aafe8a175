"""prism_fast.execute stage."""
