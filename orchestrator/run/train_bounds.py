"""Every wait and retry of a trial's Ray Train run, each with a bound.

Ray Train's defaults leave some of them without one, and a sweep that waits without end on a
cluster that lost a node is a sweep nobody can tell from a slow one (cluster/README.md, "A lost
worker node"):

| what                                       | Ray 2.60's default | numsweep's           |
|--------------------------------------------|--------------------|----------------------|
| a worker's answer to the controller's poll | 600 s              | 120 s                |
| a start of the workers, waiting for        | 60 s               | placement_timeout_s  |
|   their resources                          |                    |                      |
| starts that timed out, retried             | without end (-1)   | max_failures         |
| restarts after a worker node was drained   | without end (-1)   | max_failures         |
| restarts after a worker failed             | max_failures       | max_failures         |
| Tune's restarts of a failed trial          | trial_max_failures | trial_max_failures   |

(`placement_timeout_s`, `max_failures`, `trial_max_failures`: the sweep file's `resources`.) A
trial whose workers cannot be placed therefore fails after at most (max_failures + 1) ×
placement_timeout_s with `PlacementTimeoutError`, naming what it waited for and what the
cluster had free; Tune restarts it from its checkpoint up to `trial_max_failures` times.
"""

from __future__ import annotations

import os

import ray
import ray.train

from compat.ray_private import is_worker_start_timeout
from orchestrator.sweep.sweep_file import ResourcesConfig

# Ray Train's controller polls its workers every 2 s by default, and every report waits for the
# next poll (the step-0 report that starts a trial's metrics, the last one that ends it); at
# 0.5 s that wait is short, for a few cheap calls a second.
# A worker answers that poll from its actor's main thread while training runs in another
# thread, in milliseconds; a poll unanswered for minutes means a worker that is gone without
# Ray core having said so. Ray's default waits 10 minutes for it, a stalled trial (and a stalled
# sweep, when the others wait for its CPU); 2 minutes still leaves a loaded machine room.
HEALTH_ENV = {
    "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5",
    "RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": "120",
}
START_TIMEOUT_ENV = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"


class PlacementTimeoutError(RuntimeError):
    """A trial's Ray Train workers could not be placed within their starts' time limits."""


def set_train_env(resources: ResourcesConfig) -> None:
    """Set what Ray Train reads from the environment of the process that calls `fit()` (and
    passes on to the trial's controller): the poll settings above (unless set already) and the
    sweep's start time limit."""
    for key, value in HEALTH_ENV.items():
        os.environ.setdefault(key, value)
    os.environ[START_TIMEOUT_ENV] = f"{resources.placement_timeout_s:g}"


def failure_config(resources: ResourcesConfig) -> ray.train.FailureConfig:
    """Ray Train's restarts of a trial's workers: `max_failures` for each kind of failure."""
    limit = resources.max_failures
    return ray.train.FailureConfig(
        max_failures=limit, controller_failure_limit=limit, max_preemption_failures=limit
    )


def placement_timeout(
    error: BaseException, trial_id: str, resources: ResourcesConfig
) -> PlacementTimeoutError | None:
    """The error a trial fails with when `fit()` raised `error` because its workers could not
    be placed (None for any other error)."""
    if not is_worker_start_timeout(error):
        return None
    free = {k: v for k, v in ray.available_resources().items() if k in ("CPU", "GPU")}
    starts = resources.max_failures + 1
    workers = f"{resources.workers_per_trial} Ray Train worker(s) of {resources.worker_resources}"
    return PlacementTimeoutError(
        f"trial {trial_id}: its {workers} "
        f"each could not be placed in {starts} start(s) of {resources.placement_timeout_s:g} s "
        f"(resources.placement_timeout_s × (resources.max_failures + 1)); free in the cluster "
        f"now: {free or 'none'}"
    )
