"""Every use numsweep makes of Ray's non-public API, each behind a named function, checked against
Ray 2.60.0 (`RAY`). Each function calls `require(RAY)` first, so an upgraded Ray fails at the use
with the versions named, rather than a private name silently meaning something else.

- `LOOPBACK_ENV` (for orchestrator, cluster/local.py): the env switch that keeps an embedded Ray's
  addresses loopback.
- `head_node_resource` (for orchestrator.run.trial_placement): the head node's own resource name.
- `local_system_config` (for orchestrator.run.local_ray): `ray.init(_system_config=…)`: worker
  niceness.
- `ray_cli_main` (for cluster/local.py): `ray.scripts.scripts.ray_constants` (its worker-node
  refusal).
- `ray_trainer.TrialTrainer` (for orchestrator.run.driver):
  `TorchTrainer._create_default_callbacks`, Train V2's `DatasetsCallback`.
- `is_worker_start_timeout` (for orchestrator.run.train_bounds): Train V2's
  `WorkerGroupStartupTimeoutError`.
- `tune_session_queues` (for orchestrator.run.tune_handover): the Tune session's
  `_inter_actor_queue`, `result_queue`, `stop_event`.
- `searcher_optuna_trial` (for orchestrator.run.partial_reports): `OptunaSearch._ot_trials`.
- `integrations_kept_out` (for orchestrator.run.tracking): Tune's usage tagging importing
  `ray.air.integrations.*`.
- `wandb_callback_written_at_trial_end` (for orchestrator.run.tracking): Ray's W&B integration
  (`ray.air.integrations.wandb`): the `_WandbLoggingActor` class and its `_wandb` module, the
  callback's `_logger_actor_cls`, `_signal_logging_actor_stop`, `_trial_logging_futures` and
  `_cleanup_logging_actors` (run with wandb 0.31.0).
- `route_worker_output` (for orchestrator.run.terminal):
  `ray._private.ray_logging.global_worker_stdstream_dispatcher`.
- `quiet_train_report_log` (for trainables.worker.loop): Train's per-report INFO logger, named by
  its source file.

Nothing here imports Ray at module level: `LOOPBACK_ENV` must be read before Ray is imported.
The trainer class, which must be importable by reference, is in `compat.ray_trainer`.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from compat.absent_imports import import_with_absent
from compat.versions import CheckedRange, installed_version, require

# == the one version run (pyproject.toml pins it so; tests/project/test_dependency_ranges.py)
RAY = CheckedRange("ray", "==2.60.0", checked="2.60.0", module="compat/ray_private.py")

LOOPBACK_FLAG = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOOPBACK_ENV = {LOOPBACK_FLAG: "0"}
"""Ray replaces a loopback node address with the host's routable one unless this (misleadingly
named) switch turns its cluster mode off; with it, every port of an embedded Ray instance binds
127.0.0.1. Ray reads it when first imported; its processes inherit it."""

PRINTS, ROUTED = "ray_print_logs", "numsweep_worker_output"
"""The names of Ray's handler that prints the cluster's output, and of the one that routes it."""


def ray_version() -> str:
    return installed_version("ray")


def head_node_resource() -> str:
    """The resource Ray gives the head node alone (`ray._common.constants.HEAD_NODE_RESOURCE_NAME`
    in Ray 2.60; Ray's docs and Ray Train's placement-group cleaner place actors on the head with
    it): a name, unlike a node id, that stays the same across restarts."""
    require(RAY)
    return "node:__internal_head__"


def local_system_config() -> dict[str, Any]:
    """`ray.init` keywords for an embedded instance whose workers run at niceness 0, not Ray's 15
    (which keeps a cluster's raylet responsive; on one machine the trials are the job)."""
    require(RAY)
    return {"_system_config": {"worker_niceness": 0}}


def ray_cli_main(argv: Sequence[str]) -> int:
    """Ray's `ray` command line with `argv`, shown the cluster mode as on so that it starts worker
    nodes (the loopback switch makes it refuse), every other constant Ray's own."""
    require(RAY)
    import ray._private.ray_constants as ray_constants
    import ray.scripts.scripts as ray_cli

    class CliConstants(types.ModuleType):
        ENABLE_RAY_CLUSTER = True

        def __getattr__(self, name: str) -> object:
            return getattr(ray_constants, name)

    ray_cli.ray_constants = CliConstants(ray_constants.__name__)
    sys.argv = ["ray", *argv]
    return ray_cli.main()


def is_worker_start_timeout(error: BaseException) -> bool:
    """Whether a Train run failed because its worker group could not be placed in time: a
    `ray.train.ControllerError` (public) whose `controller_failure` is Ray Train's internal
    `WorkerGroupStartupTimeoutError` (ray/train/v2/_internal/exceptions.py)."""
    require(RAY)
    from ray.train import ControllerError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupTimeoutError

    return isinstance(error, ControllerError) and isinstance(
        error.controller_failure, WorkerGroupStartupTimeoutError
    )


class TuneSessionQueues:
    """The two queues a Tune function trainable's reports pass through, and its stop flag."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def stopping(self) -> bool:
        """Tune is stopping the trial."""
        return self._session.stop_event.is_set()

    def empty(self) -> bool:
        """No report waits in the inter-actor queue (from Train's controller) nor in the
        session's `result_queue` (to Tune's main thread)."""
        inter_actor = self._session._inter_actor_queue
        return (inter_actor is None or inter_actor.empty()) and self._session.result_queue.empty()


def tune_session_queues() -> TuneSessionQueues:
    """The queues of the Tune session this trainable runs in (`ray.train._internal.session`)."""
    require(RAY)
    from ray.train._internal.session import get_session

    return TuneSessionQueues(get_session())


def searcher_optuna_trial(searcher: Any, trial_id: str) -> Any | None:
    """The Optuna trial Tune's `OptunaSearch` asked for `trial_id` (None if it has none)."""
    require(RAY)
    return searcher._ot_trials.get(trial_id)


INTEGRATIONS = {
    "mlflow": "ray.air.integrations.mlflow",
    "wandb": "ray.air.integrations.wandb",
}
"""Each tracking client -> Ray's integration module that imports it when installed. Ray Tune's
usage tagging (`ray.air._internal.usage.tag_callbacks`, at the start of every `Tuner.fit` given
callbacks) imports both modules, and with them both clients."""


@contextmanager
def integrations_kept_out(clients: Iterable[str]) -> Iterator[list[str]]:
    """Within the block, Ray's integration module of each of `clients` is loaded with the client
    marked absent, so Tune's usage tagging finds it loaded and never imports the client; yields
    the clients kept out. On leaving, those modules are dropped from `sys.modules` (and from
    their package): a later import loads them afresh, client and all. A client or an integration
    module already imported is left as it is."""
    require(RAY)
    kept_out = []
    for client in clients:
        integration = INTEGRATIONS[client]
        if client in sys.modules or integration in sys.modules:
            continue
        import_with_absent(integration, [client])
        kept_out.append(client)
    try:
        yield kept_out
    finally:
        for client in kept_out:
            integration = INTEGRATIONS[client]
            sys.modules.pop(integration, None)
            # ... and from its package, which `from package import module` reads first.
            package, _, name = integration.rpartition(".")
            if hasattr(sys.modules.get(package), name):
                delattr(sys.modules[package], name)


def wandb_callback_written_at_trial_end(wait_s: float) -> type:
    """Ray's `WandbLoggerCallback`, made to have each trial's W&B run written when the trial ends.

    Ray 2.60.0's callback runs each trial's W&B run in a logging actor (`_WandbLoggingActor`,
    the class in its `_logger_actor_cls`) and, at a trial's end, only signals it to stop
    (`_signal_logging_actor_stop`) and drops the actors already done
    (`_cleanup_logging_actors`); it waits for them at the experiment's end. Here the actor also
    tears W&B's service down when its run is finished (`wandb.teardown`, through the actor's
    `_wandb` module), so the run's files are written, and a trial's end waits up to `wait_s`
    seconds for its actor's future (`_trial_logging_futures`) before Tune copies the trial's
    folder."""
    require(RAY)
    import ray
    from ray.air.integrations.wandb import WandbLoggerCallback, _WandbLoggingActor

    class WrittenWandbActor(_WandbLoggingActor):
        def run(self) -> None:
            super().run()
            self._wandb.teardown()

    class WrittenWandbCallback(WandbLoggerCallback):
        _logger_actor_cls = WrittenWandbActor

        def log_trial_end(self, trial: Any, failed: bool = False) -> None:
            self._signal_logging_actor_stop(trial=trial)
            written = self._trial_logging_futures.get(trial)
            if written is not None:
                ray.wait([written], timeout=wait_s)
            self._cleanup_logging_actors()

    return WrittenWandbCallback


def route_worker_output(write: Callable[[str], None]) -> Callable[[], None]:
    """Send the output of the cluster's processes that Ray forwards to this driver (`ray.init`'s
    `log_to_driver`) to `write`, a line at a time as `(RayTrainWorker pid=1003) text` (with
    `, ip=…` from another node), instead of Ray printing it on the driver's stdout and stderr.
    Returns the function that puts Ray's printing back.

    Ray 2.60.0 hands each batch of forwarded lines, a dict with `lines`, `pid`, `ip`,
    `localhost`, `actor_name`, `task_name`, to the handlers of
    `ray._private.ray_logging.global_worker_stdstream_dispatcher`; the one that prints is named
    "ray_print_logs" and keeps only the autoscaler's events (`filter_autoscaler_events`, both in
    ray/_private/worker.py)."""
    require(RAY)
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher
    from ray._private.worker import filter_autoscaler_events

    printing = [pair for pair in dispatcher.handlers if pair[0] == PRINTS]

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


def quiet_train_report_log() -> None:
    """Ray Train logs every report's full metrics dict at INFO (hundreds of numbers per line)
    from a logger named after its source file (…/train/v2/_internal/execution/context.py); keep
    its warnings, drop that line."""
    require(RAY)
    import logging
    import os

    for name in list(logging.root.manager.loggerDict):
        if name.endswith(os.path.join("execution", "context.py")):
            logging.getLogger(name).setLevel(logging.WARNING)
