"""prism_fast.generate stage."""
