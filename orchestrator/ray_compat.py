"""Ray's non-public API that the orchestrator relies on, each behind a named function, with the
Ray version it was checked against. (Older uses still sit in their modules: tune_handover,
trial_trainer, partial_reports, tracking, local_ray; gathering them here is issue 48's.)"""

from __future__ import annotations

# Checked against the Ray pyproject.toml pins.
CHECKED_RAY = "2.60.0"


def is_worker_start_timeout(error: BaseException) -> bool:
    """Whether a Train run failed because its worker group could not be placed in time: a
    `ray.train.ControllerError` (public) whose `controller_failure` is Ray Train's internal
    `WorkerGroupStartupTimeoutError` (ray/train/v2/_internal/exceptions.py in 2.60.0)."""
    from ray.train import ControllerError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    return isinstance(error, ControllerError) and isinstance(
        error.controller_failure, WorkerGroupStartupTimeoutError
    )
