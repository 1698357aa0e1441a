"""The trainer a trial runs (`orchestrator.trial_trainer`): Ray Train's default callbacks, less
the Ray Datasets one (a `DatasetManager` actor per run) when the trainer has no datasets, and a
backend config the controller loads without torch."""

from __future__ import annotations

import subprocess
import sys

import pytest
import ray.train
from ray.train.torch import TorchTrainer
from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

from orchestrator.trial_trainer import TrialTrainer


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


# What the controller asks of the config it unpickles; then: its backend, framework, and whether
# torch was imported.
LOAD_CONFIG = (
    "import pickle, sys\n"
    "config = pickle.loads(sys.stdin.buffer.read())\n"
    "used = (config.backend_cls, config.train_func_context, config.framework)\n"
    "print(config.backend, used[2].name, 'torch' in sys.modules)\n"
)


def loaded_in_a_fresh_process(trainer) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", LOAD_CONFIG],
        input=ray.cloudpickle.dumps(trainer.backend_config),
        capture_output=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return run.stdout.decode().split()


@pytest.mark.parametrize(("use_gpu", "backend"), [(False, "gloo"), (True, "nccl")])
def test_the_controller_gets_a_backend_config_without_torch(tmp_path, use_gpu, backend) -> None:
    """Ray Train V2 unpickles the backend config in each run's controller process and asks it
    for its backend class, the context around the train function and its framework; with the
    trial's config none of that imports torch. That the process group it sets up is
    torch.distributed's (two gloo ranks, data-parallel under ZeRO-2 and -3) is
    tests/trainables/test_training.py."""
    scaling = ray.train.ScalingConfig(num_workers=2, use_gpu=use_gpu)
    trial = TrialTrainer(lambda config: None, scaling_config=scaling)
    assert loaded_in_a_fresh_process(trial) == [backend, "TORCH", "False"]
    # The premise: Ray's `TorchConfig` does import it (its module imports torch).
    stock = TorchTrainer(lambda config: None, scaling_config=scaling)
    assert loaded_in_a_fresh_process(stock) == [backend, "TORCH", "True"]
