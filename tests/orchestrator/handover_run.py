"""One Tune trial whose Train run reports twice while a Tune callback takes 8 s on the first
result: the Train run then finishes before Tune asks for its last report, the case in which
Ray 2.60's own `TuneReportCallback` deadlocks (see orchestrator/run/tune_handover.py).

`python -m tests.orchestrator.handover_run numsweep|stock RESULTS_DIR`: prints one JSON line
with the steps Tune's callbacks saw. `numsweep` waits after `fit()` as numsweep's trials do;
`stock` does not, and hangs (run it under `timeout` to see).
"""

from __future__ import annotations

import json
import sys
import time

import ray
import ray.train
from ray import tune
from ray.tune.integration.ray_train import TuneReportCallback

from compat.ray_trainer import TrialTrainer
from orchestrator.run.local_ray import connect
from orchestrator.run.tune_handover import wait_for_tune

SLOW_FIRST_RESULT_S = 8.0  # longer than the Train run's last report + its shutdown (~3 s)


def train_loop(config: dict) -> None:
    for step in range(2):
        ray.train.report({"step": step})


def trainable(config: dict) -> None:
    trainer = TrialTrainer(
        train_loop,
        scaling_config=ray.train.ScalingConfig(num_workers=1),
        run_config=ray.train.RunConfig(
            name=tune.get_context().get_trial_id(),
            storage_path=config["storage"],
            callbacks=[TuneReportCallback()],
        ),
    )
    trainer.fit()
    if config["callback"] == "numsweep":
        wait_for_tune()


class SlowFirstResult(tune.Callback):
    """Stands for a slow tracking callback; keeps the steps it saw."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        self.steps.append(result["step"])
        if len(self.steps) == 1:
            time.sleep(SLOW_FIRST_RESULT_S)


def main(callback: str, folder: str) -> None:
    connect(num_cpus=2)
    slow = SlowFirstResult()
    tuner = tune.Tuner(
        trainable,
        param_space={"callback": callback, "storage": f"{folder}/train"},
        run_config=tune.RunConfig(storage_path=f"{folder}/tune", callbacks=[slow], verbose=0),
    )
    grid = tuner.fit()
    print(json.dumps({"steps": slow.steps, "last": grid[0].metrics["step"]}))


if __name__ == "__main__":
    main(*sys.argv[1:])
