"""The trainer a trial runs (`compat.ray_trainer`): Ray Train's default callbacks, less
the Ray Datasets one (a `DatasetManager` actor per run) when the trainer has no datasets."""

from __future__ import annotations

import ray.train
from ray.train.torch import TorchTrainer
from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

from compat.ray_trainer import TrialTrainer


def callbacks(trainer_cls, tmp_path, **kwargs) -> list[str]:
    trainer = trainer_cls(
        lambda config: None,
        scaling_config=ray.train.ScalingConfig(num_workers=1),
        run_config=ray.train.RunConfig(name="t", storage_path=str(tmp_path)),
        **kwargs,
    )
    return [type(c).__name__ for c in trainer._create_default_callbacks()]


def test_a_trial_without_datasets_starts_no_dataset_manager(tmp_path) -> None:
    stock, trial = callbacks(TorchTrainer, tmp_path), callbacks(TrialTrainer, tmp_path)
    # The premise: Ray's own trainer adds it even without datasets.
    assert DatasetsCallback.__name__ in stock
    assert trial == [name for name in stock if name != DatasetsCallback.__name__]
    # Everything else stays, in order: among it the backend set-up and the placement-group cleaner.
    assert {"BackendSetupCallback", "PlacementGroupCleanerCallback"} <= set(trial)


def test_a_trainer_given_datasets_keeps_the_callback(tmp_path) -> None:
    given = callbacks(TrialTrainer, tmp_path, datasets={"train": lambda: None})
    assert DatasetsCallback.__name__ in given
