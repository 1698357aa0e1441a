"""Live tracking of a sweep's trials through Ray Tune's own logger callbacks.

The sweep file's `tracking:` section picks them: `tensorboard: true` (`TBXLoggerCallback`,
event files in each trial's folder), `mlflow: {uri, experiment}` (`MLflowLoggerCallback`) and
`wandb: {project, mode}` (`WandbLoggerCallback`). They attach to the Tune run (the trials are
Tune function trainables that each drive a Ray Train run, `orchestrator.run.driver`), so every
`ray.train.report` of a trial's rank 0 reaches them as one Tune result: one run per trial, its
Tune config as parameters and every reported metric. The driver names each Tune trial after its
trial id (`trial_name`), which these callbacks use as the run name, so a Parquet row's
`trial_id` is the run's name in TensorBoard, MLflow and W&B.

The packages are optional (`pip install 'numsweep[tracking]'`); `check_tracking` says which is
missing before anything is launched.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from compat.ray_private import (
    INTEGRATIONS,
    integrations_kept_out,
    wandb_callback_written_at_trial_end,
)
from orchestrator.sweep.sweep_file import TrackingConfig

EXTRA = "numsweep[tracking]"
"""The optional-dependency group that holds every tracking package."""


class TrackingUnavailable(RuntimeError):
    """A tracker the sweep file asks for is not installed."""


def _needed(tracking: TrackingConfig) -> dict[str, str]:
    """{sweep-file key: importable module} of the trackers `tracking` turns on."""
    needed = {}
    if tracking.tensorboard:
        needed["tracking.tensorboard"] = "tensorboardX"
    if tracking.mlflow is not None:
        needed["tracking.mlflow"] = "mlflow"
    if tracking.wandb is not None:
        needed["tracking.wandb"] = "wandb"
    return needed


def check_tracking(tracking: TrackingConfig) -> None:
    """TrackingUnavailable naming the keys, the missing packages and the extra to install."""
    missing = {}
    for key, module in _needed(tracking).items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing[key] = module
    if missing:
        what = ", ".join(f"{key} needs {module}" for key, module in missing.items())
        raise TrackingUnavailable(f"{what}: install them with pip install '{EXTRA}'")


@contextmanager
def unused_clients_kept_out(tracking: TrackingConfig) -> Iterator[list[str]]:
    """Within the block (a sweep's `Tuner.fit`), Ray's integration module of each tracking client
    that `tracking` does not use is loaded with the client marked absent, so Ray Tune's usage
    tagging (at the start of every `Tuner.fit` given callbacks, as numsweep's always are) never
    imports the client: 1.5-1.6 CPU s of a sweep's start on the project machine
    (bench/README.md), for clients a sweep that does not track with them never calls. Yields the
    clients kept out; how, and what is put back: `compat.ray_private.integrations_kept_out`."""
    used = set(_needed(tracking).values())
    with integrations_kept_out(c for c in INTEGRATIONS if c not in used) as kept_out:
        yield kept_out


def trial_name(trial: Any) -> str:
    """Tune's trial name = numsweep's trial id (the callbacks' run name is `str(trial)`)."""
    return trial.trial_id


def tracking_callbacks(tracking: TrackingConfig, experiment: str) -> list[Any]:
    """The Ray Tune callbacks of `tracking` (empty when none is on)."""
    callbacks: list[Any] = []
    if tracking.tensorboard:
        from ray.tune.logger import TBXLoggerCallback

        callbacks.append(TBXLoggerCallback())
    if tracking.mlflow is not None:
        from ray.air.integrations.mlflow import MLflowLoggerCallback

        callbacks.append(
            MLflowLoggerCallback(
                tracking_uri=tracking.mlflow.uri,
                experiment_name=tracking.mlflow.experiment or experiment,
                tags={"numsweep.experiment": experiment},
            )
        )
    if tracking.wandb is not None:
        if tracking.wandb.mode == "offline":
            # Ray's callback looks for an API key unless W&B's own variable says offline.
            os.environ["WANDB_MODE"] = "offline"
        callbacks.append(
            wandb_callback()(
                project=tracking.wandb.project,
                group=experiment,
                mode=tracking.wandb.mode,
                log_config=True,
            )
        )
    return callbacks


# The most a trial's end waits for its W&B run to be written (it takes well under a second).
WANDB_END_WAIT_S = 60.0


def wandb_callback() -> type:
    """Ray's `WandbLoggerCallback`, made to have each trial's W&B run written when it ends.

    W&B writes a trial's run in Tune's staging folder for the trial, which Tune copies to the
    results' storage path. Ray's callback waits for its W&B processes only at the experiment's
    end, after Tune's last copy: the last trial's run file could be copied while W&B was still
    writing it (in the tracking tests it held no metrics in about one sweep of three). Here a
    trial's end waits until its W&B run is finished and W&B's own service has written it
    (`wandb.teardown`), before Tune copies anything more; how, with Ray's internals:
    `compat.ray_private.wandb_callback_written_at_trial_end`."""
    return wandb_callback_written_at_trial_end(WANDB_END_WAIT_S)
