"""Hydra config tree (installed as prism_fast.conf)."""
