"""The Tune driver: one Ray Tune experiment whose trials each run a Ray Train run.

Ray 2.60 (Train V2) no longer takes a Trainer inside `tune.Tuner`; instead a Tune *function
trainable* (`run_trial`) is the Train driver: it makes its trial config, builds the
`TrialTrainer` (`compat.ray_trainer`: Ray's `TorchTrainer` less what a trial does not
need) named after the trial id, and passes a `TuneReportCallback` built inside it so
rank 0's `ray.train.report` calls reach Tune (and the Parquet sink, and Optuna), and waits
after `fit()` until Tune has taken the last one (`tune_handover`: else Ray can deadlock there).

A trial's config on its way: the sweep file is validated once, when it is loaded
(`orchestrator.sweep.sweep_file.load_sweep`); the validated `SweepConfig` travels to each trial's
Tune actor as the object itself (`tune.with_parameters` pickles it; unpickling validates
nothing), where `search_space.trial_config` makes the trial's `TrialConfig` from it and Tune's
parameters, validating it once, and hands it on as plain JSON; the worker validates it once
more where it reads it (`trainables.worker.loop`). The Parquet sink's trials rows take the same
`trial_config` in the driver, made once per trial.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray.train
from ray import tune
from ray.tune.integration.ray_train import TuneReportCallback
from ray.tune.logger import JsonLoggerCallback

from compat.ray_trainer import TrialTrainer
from orchestrator.run.parquet_sink import ParquetSink
from orchestrator.run.placement_reaper import PlacementGroupReaper
from orchestrator.run.progress import ProgressCallback
from orchestrator.run.terminal import SweepLogs
from orchestrator.run.tracking import tracking_callbacks, trial_name, unused_clients_kept_out
from orchestrator.run.train_bounds import failure_config, placement_timeout, set_train_env
from orchestrator.run.trial_placement import trial_resources
from orchestrator.run.tune_handover import wait_for_tune
from orchestrator.sweep.plan import TuneRun, study_name, study_storage, tune_runs
from orchestrator.sweep.search_space import (
    define_by_run,
    enqueue_params,
    grid_arms,
    trial_config,
    trial_params,
)
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import SCHEMA_VERSION, ExperimentPaths
from records.writer import ResultsStore
from trainables.data.text_files import corpus_manifest
from trainables.worker.entry import train_loop_per_worker
from trainables.worker.report_protocol import STOPPED_KEY


class NonFiniteLossError(RuntimeError):
    """A trial's training loss became NaN or infinite."""


def run_trial(config: dict[str, Any], sweep: SweepConfig, storage_path: str) -> None:
    """Tune function trainable: run one trial of `sweep` (Tune's parameters in `config`) as a
    Ray Train job and wait for it."""
    launched_at = time.time()  # the start of the trial's start-up timeline
    trial_id = tune.get_context().get_trial_id()
    resources = sweep.resources
    set_train_env(resources)
    trainer = TrialTrainer(
        train_loop_per_worker,
        train_loop_config={
            **trial_config(sweep, trial_params(config), trial_id),
            "launched_at": launched_at,
        },
        scaling_config=ray.train.ScalingConfig(
            num_workers=resources.workers_per_trial,
            use_gpu=resources.gpus_per_worker > 0,
            resources_per_worker=resources.worker_resources,
        ),
        run_config=ray.train.RunConfig(
            name=trial_id,
            storage_path=storage_path,
            callbacks=[TuneReportCallback()],
            failure_config=failure_config(resources),
            checkpoint_config=ray.train.CheckpointConfig(num_to_keep=2),
        ),
    )
    try:
        result = trainer.fit()
    except Exception as error:
        explained = placement_timeout(error, trial_id, resources)
        if explained is None:
            raise
        raise explained from error
    wait_for_tune()
    reason = (result.metrics or {}).get(STOPPED_KEY)
    if reason:
        # Not a worker crash (that would be retried from a checkpoint and fail the same way):
        # the worker stopped cleanly and said why; fail the trial with that reason.
        raise NonFiniteLossError(f"trial {trial_id}: {reason}")


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
    """The experiment's manifest: the resolved sweep, package versions, git revision, start time
    and, for a `text_files` corpus, its files with their sha256."""
    versions = {}
    for package in ("numsweep", "ray", "torch", "deepspeed", "optuna", "transformers", "polars"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    found = {
        "schema_version": SCHEMA_VERSION,
        "experiment": sweep.experiment,
        "config": sweep.model_dump(mode="json"),
        "versions": versions,
        "git_revision": _git_revision(),
        "start": dt.datetime.now(dt.UTC).isoformat(),
    }
    if sweep.trial.data.source == "text_files":
        # the corpus is whatever files the globs match on this machine: record them
        found["corpus"] = corpus_manifest(sweep.trial.data)
    return found


@dataclass
class SweepOutcome:
    results_root: str
    experiment: str
    n_trials: int
    n_errors: int
    max_concurrent: int
    resumed: bool


def build_searcher(sweep: SweepConfig, run: TuneRun, storage):
    """Optuna (TPE or random) over the conditional space of `run`'s losses, optimising the sweep's
    objectives, in a persistent study (a later run continues it)."""
    import optuna

    from orchestrator.run.partial_reports import ReportedOnlyOptunaSearch

    search = sweep.search
    if search.sampler == "tpe":
        sampler = optuna.samplers.TPESampler(seed=search.sampler_seed)
    else:
        sampler = optuna.samplers.RandomSampler(seed=search.sampler_seed)
    metrics = [o.metric for o in search.objectives]
    modes = [o.mode for o in search.objectives]
    name = study_name(sweep, run)
    new = name not in {s.study_name for s in optuna.get_all_study_summaries(storage)}
    # The study is created here (Ray's OptunaSearch loads it): with its objectives' names, which
    # optuna-dashboard shows instead of "Objective 0", and what it belongs to.
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        directions=["maximize" if m == "max" else "minimize" for m in modes],
        load_if_exists=True,
    )
    if study.metric_names is None:
        with warnings.catch_warnings():  # experimental since Optuna 3.2, unchanged since
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metrics)
    study.set_user_attr("experiment", sweep.experiment)
    study.set_user_attr("losses", list(run.losses))
    study.set_user_attr("objectives", [f"{o.mode} {o.metric}" for o in search.objectives])
    if new:
        # A new study: queue the sweep's first trials (Ray's OptunaSearch asks the study for
        # trials, which returns the queued ones first).
        for point in search.enqueue:
            if point.get("loss", run.losses[0]) in run.losses:
                study.enqueue_trial(enqueue_params(point, run.losses), skip_if_exists=True)
    return ReportedOnlyOptunaSearch(
        space=define_by_run(sweep, run.losses),
        metric=metrics[0] if len(metrics) == 1 else metrics,
        mode=modes[0] if len(modes) == 1 else modes,
        sampler=sampler,
        study_name=name,
        storage=storage,
        experiment=sweep.experiment,
    )


def _scheduler(sweep: SweepConfig):
    stop = sweep.early_stopping
    if stop is None:
        return None
    from orchestrator.run.partial_reports import ReportedOnlyASHA

    return ReportedOnlyASHA(
        time_attr="training_iteration",
        metric=stop.metric,
        mode=stop.mode,
        grace_period=stop.grace_period,
        reduction_factor=stop.reduction_factor,
        max_t=10**9,
    )


def progress_callback(
    sweep: SweepConfig, run: TuneRun, logs: SweepLogs | None = None, line: bool = True
) -> ProgressCallback:
    """The progress line of `run` (`line`; else only its failed-trial lines): its first
    objective (a search) or the early-stopping metric. A failed trial's line names `logs`."""
    where = None if logs is None else str(logs.directory)
    if sweep.mode == "search":
        first = sweep.search.objectives[0]
        metric, mode = first.metric, first.mode
    else:
        stop = sweep.early_stopping
        metric, mode = stop and stop.metric, stop and stop.mode
    return ProgressCallback(run.name, run.num_trials, metric, mode, logs=where, line=line)


def reuse_actors(sweep: SweepConfig) -> bool:
    """Whether Tune runs a trial in the process of one that finished (its `reuse_actors`).

    A Tune trial is a Ray actor whose process starts and imports Ray Tune, Train and numsweep
    before it builds its Train run: about 3 CPU s of a trial's start-up on the project
    machine (bench/README.md, "Start-up"), saved for every trial after the first of each
    concurrent slot. Not with early stopping: Tune would keep a stopped trial's actor for the
    next trial while the stopped trial's Train run is still in `fit()`, and that actor's reset
    (2 s, then the new trial fails) cannot end a Train run; a stopped trial's actor is killed
    instead, as without reuse."""
    return sweep.early_stopping is None


def _param_space(sweep: SweepConfig, run: TuneRun) -> dict[str, Any]:
    """What Tune's trials are drawn from: a grid's arms (the run's, else every arm), or nothing
    for a search (its searcher suggests every trial's parameters)."""
    if sweep.mode == "search":
        return {}
    return {"arm": tune.grid_search(grid_arms(sweep) if run.arms is None else list(run.arms))}


def _tuner(
    sweep: SweepConfig,
    run: TuneRun,
    paths: ExperimentPaths,
    sink: ParquetSink,
    max_concurrent: int,
    verbose: bool = False,
    logs: SweepLogs | None = None,
):
    """A Tuner for `run`: restored from its storage when it exists there (resume), else new.

    A restored Tuner keeps the callbacks and verbosity it was built with (Ray restores its run
    config): the progress line and tracking of a resumed sweep are those it started with."""
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, sweep=sweep, storage_path=paths.ray_storage),
        # On the head node (orchestrator.run.trial_placement), and so is the trial's Train
        # controller.
        trial_resources(),
    )
    run_path = run.storage(paths)
    param_space = _param_space(sweep, run)
    if tune.Tuner.can_restore(run_path):
        # Unfinished and errored trials continue (their Train runs resume from checkpoints);
        # the searcher's state comes back with the Tuner, the study from its storage. Ray keeps
        # no param_space in tuner.pkl (written when the Tuner is made): a run killed before Tune
        # saved its first state would restart from an empty space (one trial with config {}),
        # so it is given again; where Tune saved state, its trials and generator win over it.
        tuner = tune.Tuner.restore(
            run_path, trainable, param_space=param_space, resume_unfinished=True,
            resume_errored=True,
        )  # fmt: skip
        return tuner, True
    # What a search and a grid run share; they differ in where the trials come from.
    common = {
        "max_concurrent_trials": max_concurrent,
        "scheduler": _scheduler(sweep),
        "trial_name_creator": trial_name,
        "reuse_actors": reuse_actors(sweep),
    }
    if sweep.mode == "search":
        tune_config = tune.TuneConfig(
            search_alg=build_searcher(sweep, run, study_storage(sweep, paths)),
            num_samples=run.num_trials,
            **common,
        )
    else:
        tune_config = tune.TuneConfig(num_samples=1, **common)
    tuner = tune.Tuner(
        trainable,
        param_space=param_space,
        tune_config=tune_config,
        run_config=tune.RunConfig(
            name=run.name,
            storage_path=paths.ray_storage,
            callbacks=[
                PlacementGroupReaper(),
                sink,
                *tracking_callbacks(sweep.tracking, sweep.experiment),
                progress_callback(sweep, run, logs, line=not verbose),
                # Of Tune's default loggers only its JSON one (result.json per trial; the store
                # is the Parquet sink's): TensorboardX's fsyncs an event file at every result,
                # in the driver's loop (bench/README.md, "Result processing").
                JsonLoggerCallback(),
            ],
            failure_config=tune.FailureConfig(max_failures=sweep.resources.trial_max_failures),
            # Tune's status tables with --verbose; else the one progress line above.
            verbose=1 if verbose else 0,
        ),
    )
    return tuner, False


def trial_sink(sweep: SweepConfig, store: ResultsStore) -> ParquetSink:
    """The sink of a Tune run's trials rows and metrics. A restored Tuner brings back the sink it
    was built with (Ray pickles the run's callbacks into tuner.pkl), this function included."""
    made: dict[str, dict[str, Any]] = {}

    def resolve(trial: Any) -> dict[str, Any]:
        """A trial's config for its trials rows, made once per trial (the sink asks at each
        state change)."""
        if trial.trial_id not in made:
            made[trial.trial_id] = trial_config(sweep, trial_params(trial.config), trial.trial_id)
        return made[trial.trial_id]

    return ParquetSink(store, resolve)


def run_sweep(
    sweep: SweepConfig,
    results_root: str,
    *,
    max_concurrent: int,
    runs: list[TuneRun] | None = None,
    verbose: bool = False,
    logs: SweepLogs | None = None,
) -> SweepOutcome:
    """Run (or resume) every Tune experiment of `sweep` on the connected Ray cluster, streaming
    metrics to `results_root`."""
    paths = ExperimentPaths(results_root, sweep.experiment)
    store = ResultsStore(results_root, sweep.experiment)
    # Not every report carries every metric (generation metrics come at chosen steps, a trial
    # stopped for a non-finite loss reports only why), so Tune must not demand the objective
    # in each one; the searcher and ASHA see it where it is reported.
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"
    # Tune adds its CSV, JSON and TensorboardX loggers unless told not to; `_tuner` adds JSON's.
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"

    n_trials = n_errors = 0
    resumed_any = False
    with unused_clients_kept_out(sweep.tracking):
        for run in runs or tune_runs(sweep):
            sink = trial_sink(sweep, store)
            # A restored Tuner brings back the sink it was built with; the sink reads what is
            # already on disk when the run starts, so nothing is written twice.
            tuner, resumed = _tuner(sweep, run, paths, sink, max_concurrent, verbose, logs)
            if not resumed:
                store.write_manifest(manifest(sweep))
            resumed_any |= resumed
            grid = tuner.fit()
            n_trials += len(grid)
            n_errors += sum(1 for result in grid if result.error is not None)
    return SweepOutcome(
        results_root, sweep.experiment, n_trials, n_errors, max_concurrent, resumed_any
    )
