"""Ray's non-public API that the orchestrator relies on, each behind a named function, with the
Ray version it was checked against. (Older uses still sit in their modules: tune_handover,
trial_trainer, partial_reports, tracking, local_ray; gathering them here is issue 48's.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Checked against the Ray pyproject.toml pins.
CHECKED_RAY = "2.60.0"

PRINTS, ROUTED = "ray_print_logs", "numsweep_worker_output"
"""The names of Ray's handler that prints the cluster's output, and of the one that routes it."""


def is_worker_start_timeout(error: BaseException) -> bool:
    """Whether a Train run failed because its worker group could not be placed in time: a
    `ray.train.ControllerError` (public) whose `controller_failure` is Ray Train's internal
    `WorkerGroupStartupTimeoutError` (ray/train/v2/_internal/exceptions.py in 2.60.0)."""
    from ray.train import ControllerError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    return isinstance(error, ControllerError) and isinstance(
        error.controller_failure, WorkerGroupStartupTimeoutError
    )


def route_worker_output(write: Callable[[str], None]) -> Callable[[], None]:
    """Send the output of the cluster's processes that Ray forwards to this driver (`ray.init`'s
    `log_to_driver`) to `write`, a line at a time as `(RayTrainWorker pid=1003) text` (with
    `, ip=…` from another node), instead of Ray printing it on the driver's stdout and stderr.
    Returns the function that puts Ray's printing back.

    Ray 2.60.0 hands each batch of forwarded lines, a dict with `lines`, `pid`, `ip`,
    `localhost`, `actor_name`, `task_name`, to the handlers of
    `ray._private.ray_logging.global_worker_stdstream_dispatcher`; the one that prints is named
    "ray_print_logs" and keeps only the autoscaler's events (`filter_autoscaler_events`, both in
    ray/_private/worker.py). Where that is not so, Ray's printing is left as it is and `write`
    says why once."""
    try:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher
        from ray._private.worker import filter_autoscaler_events

        printing = [pair for pair in dispatcher.handlers if pair[0] == PRINTS]
    except (ImportError, AttributeError) as error:
        write(f"numsweep: cannot route Ray {ray_version()}'s worker output to this file: {error}")
        return lambda: None

    def handle(data: dict[str, Any]) -> None:
        who = data.get("actor_name") or data.get("task_name") or ""
        ip = data.get("ip")
        where = "" if ip == data.get("localhost") else f", ip={ip}"
        prefix = f"({who + ' ' if who else ''}pid={data.get('pid')}{where})"
        lines = data.get("lines", [])
        if data.get("pid") == "autoscaler":  # its events only, as Ray prints them
            lines = filter_autoscaler_events(lines)
        for line in lines:
            write(f"{prefix} {line}")

    dispatcher.remove_handler(PRINTS)
    dispatcher.add_handler(ROUTED, handle)

    def restore() -> None:
        dispatcher.remove_handler(ROUTED)
        for pair in printing:
            dispatcher.add_handler(*pair)

    return restore


def ray_version() -> str:
    import ray

    return ray.__version__
