"""The trainer a trial runs: Ray Train's data-parallel trainer with torch.distributed set up as
`TorchTrainer` sets it up, less two costs a trial does not need.

- Ray 2.60's Train V2 starts a `DatasetManager` actor for every run, with or without datasets
  (`DatasetsCallback`, one of the trainer's default callbacks), to hand Ray Datasets' shards to
  the workers. numsweep's workers build their own data (`trainables.trial_inputs`) and pass Ray
  Train no dataset, so that actor is one more Python process per trial and per worker-group
  restart: about 3 s of CPU (importing Ray Data) while the trial's worker is starting, on the
  project machine's 2 cores (bench/README.md, "Start-up"). A trainer given datasets keeps the
  callback.
- `TorchTrainer`'s backend config imports torch in Ray Train's controller process; the trial's
  (`orchestrator.process_group.ProcessGroupConfig`) sets up the same process group with torch
  imported only in the workers.
"""

from __future__ import annotations

from typing import Any

from ray.train.v2._internal.callbacks.datasets import DatasetsCallback
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from orchestrator.process_group import ProcessGroupConfig


class TrialTrainer(DataParallelTrainer):
    """`TorchTrainer` (gloo on CPU workers, NCCL on GPU workers) without torch in the controller,
    and without `DatasetsCallback` when it has no datasets."""

    def __init__(self, train_loop_per_worker: Any, **kwargs: Any) -> None:
        scaling = kwargs.get("scaling_config")
        backend = "nccl" if scaling is not None and scaling.use_gpu else "gloo"
        super().__init__(
            train_loop_per_worker, backend_config=ProcessGroupConfig(backend=backend), **kwargs
        )

    def _create_default_callbacks(self) -> list[Any]:
        callbacks = super()._create_default_callbacks()
        if self.datasets:
            return callbacks
        return [c for c in callbacks if not isinstance(c, DatasetsCallback)]
