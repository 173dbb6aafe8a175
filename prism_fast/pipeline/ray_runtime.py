"""Starting (or joining) Ray for a run. The only place besides the actors that imports Ray."""

from __future__ import annotations

import logging
import os

import ray

from prism_fast.secret_env import secrets_withheld

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
               runtime_env: dict | None = None) -> dict:
    """Start an embedded local Ray (address None) or join a cluster (``auto`` / ``ray://…``).

    Returns the cluster resources Ray reports. Re-uses an already initialised Ray in this process. Ray is
    started without the secret-looking environment variables (they stay in this process only).
    """
    if not ray.is_initialized():
        kwargs: dict = {"include_dashboard": False, "log_to_driver": True, "configure_logging": False}
        if address:
            kwargs["address"] = address
            if runtime_env:
                kwargs["runtime_env"] = dict(runtime_env)
        else:
            kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
            if num_gpus is not None:
                kwargs["num_gpus"] = num_gpus
            # Workers must import prism_fast from the same place as the driver.
            kwargs["runtime_env"] = {"env_vars": {"PYTHONWARNINGS": "ignore::DeprecationWarning"}, **(runtime_env or {})}
        # Ray's processes (GCS, raylet, agents, workers: every actor) inherit the environment of this moment:
        # no API key, token or password in it (secret_env.py; docs/security.md).
        with secrets_withheld():
            ray.init(**kwargs)
        from prism_fast.pipeline.lifecycle import reinstall_signal_handlers

        reinstall_signal_handlers()  # ray.init's core worker replaced SIGTERM's handler with one that aborts
    resources = ray.cluster_resources()
    log.info("ray resources: %s", resources)
    return resources
