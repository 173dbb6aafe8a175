"""Hydra config tree (installed as prism_fast.conf).

Importing the package registers the structured-config schemas of the groups (prism_fast/config_schema.py): Hydra
imports it before it reads the YAML files, so ``pkg://prism_fast.conf`` and ``initialize_config_module`` both
compose type-checked configs.
"""

from prism_fast.config_schema import register as _register

_register()
