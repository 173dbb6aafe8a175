"""Starting (or joining) Ray for a run. The only place besides the actors that imports Ray.

Two explicit modes (issue #15: with another Ray instance on the host, ``cluster=local`` used to join it and fail
with ``num_cpus … must not be provided``, and ``address: auto`` joined whatever it found):

* **own instance** (``cluster=local``, address None): ``ray.init(address="local")`` always starts a new instance,
  whatever ``RAY_ADDRESS`` or an earlier ``ray start`` on this host says, in a private temp dir
  (``/tmp/prism-ray-*``, removed at exit), so it never becomes the instance that another program's
  ``ray.init()`` / the Ray CLI auto-detects, and two runs on one host never share one (a run killed before its
  clean-up leaves its dir behind; the next run removes it: each dir records its owner process);
* **join** (``cluster=ray``): the address is explicit (``<head>:6379``, ``ray://<head>:10001``) or ``auto``, in
  which case a warning names the instance joined (GCS address, nodes, resources).

Ray ≥ 2.52 enables token authentication on a new local instance and writes the token to ``~/.ray/auth_token``;
its CLI (``ray status``, ``ray list actors``) then needs ``RAY_AUTH_MODE=token`` (README "Cluster").
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

import ray

from prism_fast.secret_env import secrets_withheld

log = logging.getLogger(__name__)

_private_temp_dir: str | None = None
_PREFIX, _OWNER = "prism-ray-", "prism_owner"


def _remove_private_temp_dir() -> None:
    global _private_temp_dir
    if _private_temp_dir is None:
        return
    try:
        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001 - removing the directory below is still right
        pass
    shutil.rmtree(_private_temp_dir, ignore_errors=True)
    _private_temp_dir = None


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), which tells a live owner from a reused PID."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def _sweep_orphaned_temp_dirs(base: str) -> None:
    """Remove the private temp dirs of runs that died without their clean-up (SIGKILL): each records its owner
    (PID and start time); a dir whose owner is gone is removed, any other (a live run, no owner file) is kept."""
    for path in Path(base).glob(f"{_PREFIX}*"):
        try:
            pid, start = (path / _OWNER).read_text(encoding="ascii").split()
        except (OSError, ValueError):
            continue
        if _start_time(int(pid)) != start:
            shutil.rmtree(path, ignore_errors=True)


def private_temp_dir() -> str:
    """A fresh, short temp root for this process's own Ray instance (Ray's socket paths must stay < 108 bytes)."""
    global _private_temp_dir
    if _private_temp_dir is None:
        base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
        _sweep_orphaned_temp_dirs(base)
        _private_temp_dir = tempfile.mkdtemp(prefix=_PREFIX, dir=base)
        (Path(_private_temp_dir) / _OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}", encoding="ascii")
        atexit.register(_remove_private_temp_dir)
    return _private_temp_dir


WORKER_ENV = {"PYTHONWARNINGS": "ignore::DeprecationWarning"}  # what this run's own Ray processes run with


@contextlib.contextmanager
def _environ(values: dict):
    """``values`` set in ``os.environ`` while the block runs, the previous state back after."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def ensure_ray(address: str | None = None, num_cpus: int | None = None, num_gpus: int | None = None,
               runtime_env: dict | None = None) -> dict:
    """Start this run's own Ray instance (``address`` None or ``"local"``) or join a cluster (``auto``,
    ``<host>:<port>``, ``ray://…``).

    Returns the cluster resources Ray reports. Re-uses an already initialised Ray in this process. Ray is
    started without the secret-looking environment variables (they stay in this process only).
    """
    if not ray.is_initialized():
        kwargs: dict = {"include_dashboard": False, "log_to_driver": True, "configure_logging": False}
        own = address in (None, "local")
        if own:
            kwargs.update(address="local", _temp_dir=private_temp_dir())
            kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
            if num_gpus is not None:
                kwargs["num_gpus"] = num_gpus
            if runtime_env:
                kwargs["runtime_env"] = dict(runtime_env)
        else:
            if num_cpus is not None or num_gpus is not None:
                raise ValueError(f"joining {address}: num_cpus/num_gpus belong to the cluster's nodes "
                                 "(`ray start --num-cpus …`), not to a driver that joins it")
            kwargs.pop("include_dashboard")  # a joining driver starts no dashboard; Ray refuses the argument
            kwargs["address"] = address
            if runtime_env:
                kwargs["runtime_env"] = dict(runtime_env)
        # Ray's processes (GCS, raylet, agents, workers: every actor) inherit the environment of this moment:
        # no API key, token or password in it (secret_env.py; docs/security.md).
        # Ray's own processes are started by ray.init with this process's environment, and the raylet hands it to
        # every worker it starts: the workers' settings go there for the call, not into a runtime_env (a
        # runtime_env costs every actor start ~0.6 s more: measured, docs/scaling.md "Start-up")
        from prism_fast.pipeline.lifecycle import exit_signal_during, reinstall_signal_handlers

        # (ray.init's own SIGTERM handler exits with code 15 while it runs: the Exec head start renders then)
        with exit_signal_during("ray.init"), secrets_withheld(), _environ(WORKER_ENV if own else {}):
            ray.init(**kwargs)

        reinstall_signal_handlers()  # ray.init's core worker replaced SIGTERM's handler with one that aborts
        if own:
            log.info("this run's own Ray instance: GCS %s, temp dir %s (watch it with: RAY_AUTH_MODE=token ray status "
                     "--address %s)", ray.get_runtime_context().gcs_address, _private_temp_dir,
                     ray.get_runtime_context().gcs_address)
        else:
            _announce_join(address)
    resources = ray.cluster_resources()
    log.info("ray resources: %s", resources)
    return resources


def _announce_join(address: str) -> None:
    """Say which cluster was joined; with ``auto`` as a warning (it is whatever this host happened to run)."""
    try:
        gcs = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - Ray Client has no GCS address to show
        gcs = address
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    text = (f"joined the Ray cluster at {gcs} (cluster.address={address}): {len(nodes)} node(s) "
            f"{sorted({n.get('NodeManagerAddress') for n in nodes})}, resources {ray.cluster_resources()}")
    if address == "auto":
        log.warning("%s. `auto` joins whatever Ray instance this host runs; give cluster.address=<head>:6379 to be "
                    "explicit.", text)
    else:
        log.info("%s", text)
