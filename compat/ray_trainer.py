"""The `TorchTrainer` a trial runs: Ray Train's, less the Ray Data actor a trial never uses.

Ray 2.60's Train V2 starts a `DatasetManager` actor for every run, with or without datasets
(`DatasetsCallback`, one of the trainer's default callbacks), to hand Ray Datasets' shards to the
workers. numsweep's workers build their own data (`trainables.worker.trial_inputs`) and pass Ray
Train no dataset, so that actor is one more Python process per trial and per worker-group restart:
about 3 s of CPU (importing Ray Data) while the trial's worker is starting, on the project
machine's 2 cores (bench/README.md, "Start-up"). A trainer given datasets keeps the callback.

Overriding `_create_default_callbacks` and naming `DatasetsCallback` are uses of Ray's private
API, checked against `compat.ray_private.RAY` when this module is imported.
"""

from __future__ import annotations

from typing import Any

from compat.ray_private import RAY
from compat.versions import require

require(RAY)

from ray.train.torch import TorchTrainer  # noqa: E402  (after the version check)
from ray.train.v2._internal.callbacks.datasets import DatasetsCallback  # noqa: E402


class TrialTrainer(TorchTrainer):
    """`TorchTrainer` without `DatasetsCallback` when it has no datasets."""

    def _create_default_callbacks(self) -> list[Any]:
        callbacks = super()._create_default_callbacks()
        if self.datasets:
            return callbacks
        return [c for c in callbacks if not isinstance(c, DatasetsCallback)]
