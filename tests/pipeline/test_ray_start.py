"""This run's own Ray instance (pipeline/ray_runtime.py ``ensure_ray``): the workers' settings reach every actor
through the environment Ray's processes start with (no runtime_env of ours: it costs each actor start), the
driver's own environment is left as it was, and a user's ``cluster.runtime_env`` still applies on top."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = r'''
import json, os, sys
import ray
from prism_fast.pipeline.ray_runtime import ensure_ray

@ray.remote(num_cpus=1)
class Probe:
    def env(self):
        return {"PYTHONWARNINGS": os.environ.get("PYTHONWARNINGS"), "warnoptions": list(sys.warnoptions),
                "USER_VAR": os.environ.get("PRISM_TEST_USER_VAR")}

user_env = json.loads(sys.argv[1])
ensure_ray(num_cpus=1, runtime_env=user_env or None)
probe = Probe.remote()
report = {"actor": ray.get(probe.env.remote()), "driver": os.environ.get("PYTHONWARNINGS")}
ray.shutdown()
print("REPORT " + json.dumps(report))
'''


@pytest.mark.parametrize("user_env", [{}, {"env_vars": {"PRISM_TEST_USER_VAR": "kept"}}])
def test_actors_get_the_worker_settings_and_the_driver_keeps_its_environment(tmp_path, user_env):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(user_env)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT "))[len("REPORT "):])
    assert report["driver"] is None  # set only while ray.init started Ray's processes
    assert report["actor"]["PYTHONWARNINGS"] == "ignore::DeprecationWarning"
    assert "ignore::DeprecationWarning" in report["actor"]["warnoptions"]
    assert report["actor"]["USER_VAR"] == ("kept" if user_env else None)


SHUTDOWN_PROBE = r'''
import json, time
import ray
from ray._private import ray_constants
from prism_fast.pipeline import lifecycle
from prism_fast.pipeline.ray_runtime import ensure_ray

ensure_ray(num_cpus=1)
node = ray._private.worker._global_node
monitor = node.all_processes[ray_constants.PROCESS_TYPE_MONITOR][0].process
seen = {}
real = ray.shutdown
def shutdown(*a, **k):
    seen["monitor_at_shutdown"] = monitor.poll()
    return real(*a, **k)
ray.shutdown = shutdown
t0 = time.perf_counter()
lifecycle.shutdown_run_processes()
seen["seconds"] = time.perf_counter() - t0
seen["monitor_after"] = monitor.poll()
seen["initialized"] = ray.is_initialized()
print("REPORT " + json.dumps(seen))
'''


def test_the_runs_end_does_not_wait_for_rays_autoscaler_monitor(tmp_path):
    """Ray stops its GCS first, then gives the autoscaler monitor a second to exit on SIGTERM (it spends it failing to
    reach the GCS): the run's end kills the monitor of its own instance before ``ray.shutdown()`` (lifecycle.py)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = subprocess.run([sys.executable, "-c", SHUTDOWN_PROBE], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT "))[len("REPORT "):])
    assert report["monitor_at_shutdown"] == -9  # already gone when ray.shutdown() began
    assert report["monitor_after"] == -9 and report["initialized"] is False
