"""Resuming a sweep whose Ray state is not here: the results store decides what is left to run.

A committed study store (manifest, trials, metrics) travels without its Ray state
(`experiments/E/ray/`: Tune's run state and checkpoints, large and machine-bound, so ignored by
git). Started again on a fresh clone, Tune would find nothing to restore and run every trial
anew, appending duplicates to the store. Here the store's finished (TERMINATED) trials say
which trials are done: a grid runs only the arms that did not finish (afresh: their checkpoints
went with the Ray state), a search whose trials all finished runs nothing. A search that
finished only some trials cannot continue without its searcher's state, so it is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import polars as pl
from ray import tune

from orchestrator.sweep.plan import TuneRun, tune_runs
from orchestrator.sweep.search_space import grid_arms, trial_config
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import STATE_COLUMNS, ExperimentPaths, trial_row
from records.reader import load_finished_trials

# Columns of a trials row that identify a trial's configuration but are not part of it.
_NOT_IDENTITY = STATE_COLUMNS | {"group"}


@dataclass(frozen=True)
class StoreResume:
    """The Tune runs still to run (a grid run with only its unfinished arms), and what was done."""

    runs: list[TuneRun]
    finished: int
    total: int

    def describe(self, experiment: str) -> str:
        left = self.total - self.finished
        return (
            f"experiment {experiment}: its Ray state is not here; {self.finished} of "
            f"{self.total} trials finished in the results store: "
            + (f"running the {left} left afresh" if left else "nothing to run")
        )


def store_resume(sweep: SweepConfig, root: str) -> StoreResume | None:
    """What is left of `sweep` by its store, or None when every Tune run of it can be restored
    from its Ray state (Tune resumes those itself). UsageError-worthy cases raise ValueError."""
    paths = ExperimentPaths(root, sweep.experiment)
    runs = tune_runs(sweep)
    restorable = {run.name: tune.Tuner.can_restore(run.storage(paths)) for run in runs}
    if all(restorable.values()):
        return None
    finished = load_finished_trials(root, sweep.experiment)
    left: list[TuneRun] = []
    n_done = 0
    for run in runs:
        if restorable[run.name]:
            left.append(run)  # this one resumes from its Ray state
        elif sweep.mode == "grid":
            arms = _arms_left(sweep, finished)
            n_done += run.num_trials - len(arms)
            if arms:
                left.append(dataclasses.replace(run, num_trials=len(arms), arms=tuple(arms)))
        else:
            done = 0 if finished.is_empty() else int(finished["loss"].is_in(list(run.losses)).sum())
            n_done += min(done, run.num_trials)
            if 0 < done < run.num_trials:
                raise ValueError(
                    f"experiment {sweep.experiment!r}: {done} of {run.num_trials} trials of "
                    f"Tune run {run.name} finished in the results store under {root}, but its Ray "
                    f"state ({run.storage(paths)}) is not here, so its search cannot "
                    "continue; copy that folder here, or add trials with `numsweep extend`"
                )
            if done == 0:
                left.append(run)
    return StoreResume(left, n_done, sum(run.num_trials for run in runs))


def _arms_left(sweep: SweepConfig, finished: pl.DataFrame) -> list[dict[str, Any]]:
    """The grid's arms with no finished trial of the same configuration in the store."""
    left = []
    for arm in grid_arms(sweep):
        identity = _identity(sweep, arm)
        if any(column not in finished.columns for column in identity):
            left.append(arm)
            continue
        same = pl.all_horizontal(
            pl.col(c).is_null() if v is None else pl.col(c) == v for c, v in identity.items()
        )
        if finished.filter(same).height == 0:
            left.append(arm)
    return left


def _identity(sweep: SweepConfig, arm: dict[str, Any]) -> dict[str, Any]:
    """The trials-table configuration an arm's trial is recorded with (loss, its parameters, lr,
    seeds, control, model, dataset): the row the sink writes for it, less its state."""
    row = trial_row("x", "RUNNING", trial_config(sweep, arm, "x"))
    return {k: v for k, v in row.items() if k not in _NOT_IDENTITY}
