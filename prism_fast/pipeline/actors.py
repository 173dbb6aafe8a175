"""Thin Ray actors around the stage cores: declare resources, load heavy things once, delegate.

Actors are restartable (``max_restarts``) and their tasks retried (``max_task_retries``), so a worker that
dies (OOM kill, node loss) costs a retry, not the run. Containment of hostile scripts is the sandbox's job
(process-group kill inside the core), not Ray's.
"""

from __future__ import annotations

import ray

from prism_fast.profile import Profile

RESTARTS = dict(max_restarts=3, max_task_retries=2)


@ray.remote(num_cpus=1, **RESTARTS)
class RenderActor:
    """One per CPU: renders a script in the sandbox and returns the Exec row."""

    def __init__(self, render_cfg, profile: Profile, out_dir: str):
        from prism_fast.execute import render  # noqa: F401  (import once per worker)

        self.render_cfg, self.profile, self.out_dir = render_cfg, profile, out_dir

    def render(self, sample_id: str, script: str) -> dict:
        from prism_fast.execute.render import render_one

        return render_one(sample_id, script, self.out_dir, self.render_cfg, self.profile)
