"""What a sweep runs, worked out before Ray starts: its Tune runs (one, or one per loss with
`search.per_loss`; an extension's named apart), the Optuna study each continues and where that
study is stored, how many trials fit at once on a cluster, and the plan `numsweep sweep --dry-run`
prints. No Ray here: `numsweep status`, the store's resume rule and the dry run read these
without the Tune driver (`orchestrator.run.driver`, which runs the plan).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.sweep.search_space import grid_arms
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import ExperimentPaths


@dataclass(frozen=True)
class TuneRun:
    """One Ray Tune experiment of a sweep (a sweep has one, or one per loss with per_loss)."""

    name: str
    losses: tuple[str, ...]
    num_trials: int
    arms: tuple[dict[str, Any], ...] | None = None
    """A grid's arms to run (None: every arm); fewer when the store has the others finished."""

    def storage(self, paths: ExperimentPaths) -> str:
        """Where Tune keeps this run's state (what `tune.Tuner.can_restore` looks at)."""
        return f"{paths.ray_storage}/{self.name}"


def tune_runs(
    sweep: SweepConfig, extend_index: int | None = None, trials: int | None = None
) -> list[TuneRun]:
    """The Tune experiments that make up a sweep (or an extension of it)."""
    suffix = "" if extend_index is None else f"-extend{extend_index}"
    if sweep.mode == "grid":
        return [TuneRun(sweep.experiment + suffix, tuple(sweep.grid.losses), len(grid_arms(sweep)))]
    n = trials or sweep.search.num_trials
    if sweep.search.per_loss:
        return [
            TuneRun(f"{sweep.experiment}-{loss}{suffix}", (loss,), n)
            for loss in sweep.search.losses
        ]
    return [TuneRun(sweep.experiment + suffix, tuple(sweep.search.losses), n)]


def study_name(sweep: SweepConfig, run: TuneRun) -> str:
    """The Optuna study `run` samples from: the sweep's (one per loss with per_loss), which an
    extension continues."""
    return f"{sweep.experiment}-{run.losses[0]}" if sweep.search.per_loss else sweep.experiment


def study_storage(sweep: SweepConfig, paths: ExperimentPaths) -> Any:
    """The Optuna storage object of a search sweep (SQLite by default, persistent)."""
    import optuna

    url = sweep.search.storage or paths.default_study_storage()
    if url.endswith((".log", ".journal")):
        from optuna.storages.journal import JournalFileBackend

        return optuna.storages.JournalStorage(JournalFileBackend(url))
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.RDBStorage(url)


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


def describe(sweep: SweepConfig, max_concurrent: int, capacity: dict[str, float]) -> str:
    """The plan `numsweep sweep --dry-run` prints: every grid trial, or each Tune run's Optuna
    trials and what they sample; the resources of a trial and how many run at once."""
    lines = [f"experiment {sweep.experiment}: mode {sweep.mode}"]
    if sweep.mode == "grid":
        arms = grid_arms(sweep)
        axes = "losses x seeds x presets" + (" x lrs" if sweep.grid.lrs is not None else "")
        lines.append(f"{len(arms)} trials ({axes}):")
        lines += [f"  {json.dumps(arm, sort_keys=True)}" for arm in arms]
    else:
        for run in tune_runs(sweep):
            lines.append(
                f"Tune run {run.name}: {run.num_trials} Optuna trials over {', '.join(run.losses)}"
            )
        for loss in sweep.search.losses:
            searched = sweep.search.searched_params((loss,))
            sampled = ", ".join(
                f"{p.name} [{p.low:g}, {p.high:g}]" + (" log" if p.log else "") for p in searched
            )
            lines.append(f"  {loss}: samples {sampled or 'nothing'}")
        objectives = ", ".join(f"{o.mode} {o.metric}" for o in sweep.search.objectives)
        lines.append(f"objectives: {objectives}; sampler {sweep.search.sampler}")
    r = sweep.resources
    lines.append(
        f"each trial: {r.workers_per_trial} worker(s) x {r.cpus_per_worker:g} CPU"
        + (f" + {r.gpus_per_worker:g} GPU" if r.gpus_per_worker else "")
        + f"; cluster {capacity['CPU']:g} CPU / {capacity['GPU']:g} GPU"
        + f" -> {max_concurrent} trial(s) at a time"
    )
    return "\n".join(lines)
