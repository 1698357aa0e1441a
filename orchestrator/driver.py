"""The Tune driver: one Ray Tune experiment whose trials each run a Ray Train `TorchTrainer`.

Ray 2.60 (Train V2) no longer takes a Trainer inside `tune.Tuner`; instead a Tune *function
trainable* (`run_trial`) is the Train driver: it resolves its trial config, builds the
`TorchTrainer` named after the trial id, and passes a `TuneReportCallback` built inside it so
rank 0's `ray.train.report` calls reach Tune (and the Parquet sink, and Optuna).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray.train
from ray import tune
from ray.train.torch import TorchTrainer
from ray.tune.integration.ray_train import TuneReportCallback

from orchestrator.parquet_sink import SCHEMA_VERSION, ParquetSink, ResultsStore
from orchestrator.search_space import define_by_run, grid_arms, trial_config
from orchestrator.sweep_file import SweepConfig

# The Tune trial itself only waits on its Train run: no CPU, a token of memory (Tune refuses an
# empty resource request). The workers' resources are requested by the TorchTrainer.
DRIVER_RESOURCES = {"cpu": 0, "memory": 2**27}


def trial_params(tune_config: dict[str, Any]) -> dict[str, Any]:
    """A Tune trial's parameters: a grid arm, or Optuna's flat suggestions."""
    return dict(tune_config["arm"]) if "arm" in tune_config else dict(tune_config)


def run_trial(config: dict[str, Any], sweep: dict[str, Any], storage_path: str) -> None:
    """Tune function trainable: run one trial as a Ray Train job and wait for it."""
    from trainables.worker import train_loop_per_worker  # imports DeepSpeed: trial side only

    sweep_cfg = SweepConfig.model_validate(sweep)
    trial_id = tune.get_context().get_trial_id()
    resources = sweep_cfg.resources
    per_worker = {"CPU": resources.cpus_per_worker}
    if resources.gpus_per_worker:
        per_worker["GPU"] = resources.gpus_per_worker
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config=trial_config(sweep_cfg, trial_params(config), trial_id),
        scaling_config=ray.train.ScalingConfig(
            num_workers=resources.workers_per_trial,
            use_gpu=resources.gpus_per_worker > 0,
            resources_per_worker=per_worker,
        ),
        run_config=ray.train.RunConfig(
            name=trial_id,
            storage_path=storage_path,
            callbacks=[TuneReportCallback()],
            failure_config=ray.train.FailureConfig(max_failures=resources.max_failures),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
        ),
    )
    trainer.fit()


def concurrency(sweep: SweepConfig, capacity: dict[str, float]) -> int:
    """Trials that fit at once on a cluster of `capacity`, capped by the sweep's setting.

    Raises ValueError when not even one trial fits (it would wait forever)."""
    r = sweep.resources
    need_cpu = r.workers_per_trial * r.cpus_per_worker
    need_gpu = r.workers_per_trial * r.gpus_per_worker
    fits = math.floor(capacity["CPU"] / need_cpu + 1e-9)
    if need_gpu:
        fits = min(fits, math.floor(capacity["GPU"] / need_gpu + 1e-9))
    if fits < 1:
        raise ValueError(
            f"resources: a trial needs {need_cpu:g} CPU and {need_gpu:g} GPU "
            f"({r.workers_per_trial} workers), the cluster has {capacity['CPU']:g} CPU and "
            f"{capacity['GPU']:g} GPU"
        )
    return min(fits, r.max_concurrent_trials or fits)


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def manifest(sweep: SweepConfig) -> dict[str, Any]:
    versions = {}
    for package in ("numsweep", "ray", "torch", "deepspeed", "optuna", "transformers", "polars"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": sweep.experiment,
        "config": sweep.model_dump(mode="json"),
        "versions": versions,
        "git_revision": _git_revision(),
        "start": dt.datetime.now(dt.UTC).isoformat(),
    }


@dataclass
class SweepOutcome:
    results_root: str
    experiment: str
    n_trials: int
    n_errors: int
    max_concurrent: int


def build_searcher(sweep: SweepConfig):
    """Optuna (TPE or random) over the conditional space, optimising the sweep's objectives."""
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    search = sweep.search
    if search.sampler == "tpe":
        sampler = optuna.samplers.TPESampler(seed=search.sampler_seed)
    else:
        sampler = optuna.samplers.RandomSampler(seed=search.sampler_seed)
    metrics = [o.metric for o in search.objectives]
    modes = [o.mode for o in search.objectives]
    return OptunaSearch(
        space=define_by_run(sweep),
        metric=metrics[0] if len(metrics) == 1 else metrics,
        mode=modes[0] if len(modes) == 1 else modes,
        sampler=sampler,
        study_name=sweep.experiment,
    )


def run_sweep(sweep: SweepConfig, results_root: str, *, max_concurrent: int) -> SweepOutcome:
    """Run every trial of `sweep` on the connected Ray cluster, streaming to `results_root`."""
    store = ResultsStore(results_root, sweep.experiment)
    store.write_manifest(manifest(sweep))
    storage_path = f"{store.base}/experiments/{sweep.experiment}/ray"
    sweep_json = sweep.model_dump(mode="json")

    def resolve(trial: Any) -> dict[str, Any]:
        return trial_config(sweep, trial_params(trial.config), trial.trial_id)

    sink = ParquetSink(store, resolve)
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, sweep=sweep_json, storage_path=storage_path),
        DRIVER_RESOURCES,
    )
    if sweep.mode == "search":
        tune_config = tune.TuneConfig(
            search_alg=build_searcher(sweep),
            num_samples=sweep.search.num_trials,
            max_concurrent_trials=max_concurrent,
        )
        param_space: dict[str, Any] = {}
    else:
        tune_config = tune.TuneConfig(num_samples=1, max_concurrent_trials=max_concurrent)
        param_space = {"arm": tune.grid_search(grid_arms(sweep))}
    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune_config,
        run_config=tune.RunConfig(
            name=sweep.experiment,
            storage_path=storage_path,
            callbacks=[sink],
            verbose=1,
        ),
    )
    grid = tuner.fit()
    errors = sum(1 for result in grid if result.error is not None)
    return SweepOutcome(results_root, sweep.experiment, len(grid), errors, max_concurrent)
