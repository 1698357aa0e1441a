"""From a sweep config to trials: Optuna's conditional search space, grid arms, and the plain-JSON
`TrialConfig` each trial's workers receive. The loss parameters a sweep fixes or searches are
resolved and validated by the sweep schema itself (`SearchConfig.searched_params`,
`GridConfig.check` in `orchestrator.sweep.sweep_file`), which this module imports.

Optuna parameter names are qualified by their loss (`del.alpha`, `ntl_was.alpha`): each loss's
parameter is its own dimension, so TPE never pools one loss's alpha with another's. `lr` and
`loss` stay global. In `search.space` a key may be `<loss>.<param>` (that loss only) or a bare
`<param>` (every loss of the search that takes it, each its own Optuna parameter, the qualified
key winning).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from orchestrator.sweep.sweep_file import (
    GLOBAL_PARAMS,
    SearchedParam,
    SweepConfig,
    optuna_name,
    split_key,
)
from trainables.config import TrialConfig
from trainables.losses import LOSSES
from trainables.losses.params import validate_params


@dataclass(frozen=True)
class ConditionalSpace:
    """Optuna define-by-run space: the loss first, then only that loss's searched parameters
    (so e.g. no alpha is ever sampled for `mle`), then the global ones (`lr`).

    A plain picklable object (Tune checkpoints the searcher with it)."""

    losses: tuple[str, ...]
    params: tuple[SearchedParam, ...]

    def __call__(self, trial: Any) -> dict[str, Any] | None:
        if len(self.losses) == 1:
            loss = self.losses[0]
        else:
            loss = trial.suggest_categorical("loss", list(self.losses))
        for p in self.params:
            if p.loss in (None, loss):
                trial.suggest_float(p.name, p.low, p.high, log=p.log)
        # A single loss is not a choice: hand it to the trial as a constant.
        return {"loss": loss} if len(self.losses) == 1 else None


def define_by_run(sweep: SweepConfig, losses: tuple[str, ...] | None = None) -> ConditionalSpace:
    """The conditional space of a search sweep over `losses` (default: all of the sweep's)."""
    chosen = tuple(losses or sweep.search.losses)
    return ConditionalSpace(losses=chosen, params=tuple(sweep.search.searched_params(chosen)))


def enqueue_params(point: dict[str, Any], losses: tuple[str, ...]) -> dict[str, Any]:
    """A sweep file's enqueued trial (`{loss: del, alpha: 0.01}`) as Optuna parameters of a run
    over `losses` (`{loss: del, del.alpha: 0.01}`; no `loss` when the run has one loss)."""
    loss = point.get("loss", losses[0])
    params: dict[str, Any] = {"loss": loss} if len(losses) > 1 else {}
    for key, value in point.items():
        if key != "loss":
            params[key if key in GLOBAL_PARAMS else optuna_name(loss, key)] = value
    return params


def trial_params(tune_config: dict[str, Any]) -> dict[str, Any]:
    """A Tune trial's plain parameters (`{loss, alpha, …, lr, seed, preset}`): a grid arm as it
    is, or Optuna's suggestions with the loss qualifier dropped from its parameters."""
    if "arm" in tune_config:
        return dict(tune_config["arm"])
    loss = tune_config["loss"]
    plain: dict[str, Any] = {}
    for key, value in tune_config.items():
        owner, param = split_key(key)
        if owner is None:
            plain[key] = value
        elif owner == loss:
            plain[param] = value
    return plain


def grid_arms(sweep: SweepConfig) -> list[dict[str, Any]]:
    """Every trial of a grid: losses (x their parameter variants) x seeds x presets x learning
    rates, then each control arm x seeds x presets x rates (`control` and `seed_offsets` set)."""
    grid = sweep.grid
    sizes = [(p, lr) for p in grid.presets or [None] for lr in grid.lrs_for(p)]
    arms = []
    for loss, seed, (preset, lr) in itertools.product(grid.losses, grid.seeds, sizes):
        for params in grid.variants(loss):
            arms.append(_with_size({"loss": loss, "seed": seed, **params}, preset, lr))
    for (name, control), seed, (preset, lr) in itertools.product(
        grid.controls.items(), grid.seeds, sizes
    ):
        arm = {"loss": control.loss, "seed": seed, **control.params, "control": name}
        arm["seed_offsets"] = control.seed_offsets.model_dump()
        arms.append(_with_size(arm, preset, lr))
    return arms


def _with_size(arm: dict[str, Any], preset: str | None, lr: float | None) -> dict[str, Any]:
    """`arm` with its preset and learning rate where the grid sets them (absent otherwise, so a
    grid without them keeps the arms, and trial identities, it always had)."""
    if preset is not None:
        arm["preset"] = preset
    if lr is not None:
        arm["lr"] = float(lr)
    return arm


# Keys of a trial's parameters that are not loss hyper-parameters.
_TRIAL_KEYS = ("loss", "seed", "preset", "control", "seed_offsets", *GLOBAL_PARAMS)


def _control_seeds(base: dict[str, Any], offsets: dict[str, int]) -> dict[str, int | None]:
    """A control trial's `seeds`: each source with an offset moved from its seed (the base
    trial's override of it, else the trial's seed) by that offset; the others as they were."""
    seeds = dict(base["seeds"])
    for source, offset in offsets.items():
        if offset:
            start = seeds[source] if seeds[source] is not None else base["seed"]
            seeds[source] = start + offset
    return seeds


def trial_config(sweep: SweepConfig, params: dict[str, Any], trial_id: str) -> dict[str, Any]:
    """The plain-JSON TrialConfig of one trial: the sweep's base trial with the trial's loss,
    every parameter of that loss (the given ones, defaults for the others: what the trial runs
    with, so the trials table records it), seed (and a control arm's name and seeds), preset and
    learning rate (validated here)."""
    base = sweep.trial.model_dump(mode="json")
    loss = params["loss"]
    given = {k: v for k, v in params.items() if k not in _TRIAL_KEYS and v is not None}
    resolved = validate_params(loss, LOSSES[loss].Params, given).model_dump(mode="json")
    base["loss"] = {"name": loss, "params": resolved}
    base["seed"] = int(params.get("seed", sweep.seed))
    if "preset" in params:
        base["model"] = {**base["model"], "preset": params["preset"], "path": None}
    if "lr" in params:
        base["train"] = {**base["train"], "lr": float(params["lr"])}
    if "control" in params:
        base["control"] = params["control"]
        base["seeds"] = _control_seeds(base, params.get("seed_offsets") or {})
    base["experiment"] = sweep.experiment
    base["trial_id"] = trial_id
    return TrialConfig.model_validate(base).model_dump(mode="json")
