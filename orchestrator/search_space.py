"""From a sweep config to trials: Optuna's conditional search space, grid arms, and the plain
JSON `TrialConfig` each trial's workers receive."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from orchestrator.sweep_file import SweepConfig
from trainables.config import TrialConfig
from trainables.losses import LOSSES


@dataclass(frozen=True)
class ConditionalSpace:
    """Optuna define-by-run space: the loss first, then only the parameters that loss takes
    (so e.g. `alpha` is never sampled for `mle`), then the learning rate when it is searched.

    A plain picklable object (Tune checkpoints the searcher with it)."""

    losses: tuple[str, ...]
    ranges: tuple[tuple[str, float, float, bool], ...]  # (name, low, high, log)

    def __call__(self, trial: Any) -> dict[str, Any] | None:
        if len(self.losses) == 1:
            loss = self.losses[0]
        else:
            loss = trial.suggest_categorical("loss", list(self.losses))
        for name, low, high, log in self.ranges:
            if name == "lr" or name in LOSSES[loss].hyperparams:
                trial.suggest_float(name, low, high, log=log)
        # A single loss is not a choice: hand it to the trial as a constant.
        return {"loss": loss} if len(self.losses) == 1 else None


def define_by_run(sweep: SweepConfig, losses: tuple[str, ...] | None = None) -> ConditionalSpace:
    """The conditional space of a search sweep over `losses` (default: all of the sweep's;
    `lr` sampled last)."""
    items = sorted(sweep.search.space.items(), key=lambda item: item[0] == "lr")
    return ConditionalSpace(
        losses=tuple(losses or sweep.search.losses),
        ranges=tuple((name, r.low, r.high, r.log) for name, r in items),
    )


def grid_arms(sweep: SweepConfig) -> list[dict[str, Any]]:
    """Every arm of a grid: losses x seeds x presets, each loss with its fixed parameters."""
    grid = sweep.grid
    presets = grid.presets or [None]
    arms = []
    for loss, seed, preset in itertools.product(grid.losses, grid.seeds, presets):
        arm: dict[str, Any] = {"loss": loss, "seed": seed, **grid.params.get(loss, {})}
        if preset is not None:
            arm["preset"] = preset
        arms.append(arm)
    return arms


# Keys of a Tune config that are not loss hyper-parameters.
_TRIAL_KEYS = ("loss", "seed", "preset", "lr")


def trial_config(sweep: SweepConfig, params: dict[str, Any], trial_id: str) -> dict[str, Any]:
    """The plain-JSON TrialConfig of one trial: the sweep's base trial with the trial's loss,
    its hyper-parameters, seed, preset and learning rate filled in (validated here)."""
    base = sweep.trial.model_dump(mode="json")
    loss = params["loss"]
    base["loss"] = {
        "name": loss,
        "params": {k: v for k, v in params.items() if k not in _TRIAL_KEYS and v is not None},
    }
    base["seed"] = int(params.get("seed", sweep.seed))
    if "preset" in params:
        base["model"] = {**base["model"], "preset": params["preset"], "path": None}
    if "lr" in params:
        base["train"] = {**base["train"], "lr": float(params["lr"])}
    base["experiment"] = sweep.experiment
    base["trial_id"] = trial_id
    return TrialConfig.model_validate(base).model_dump(mode="json")
