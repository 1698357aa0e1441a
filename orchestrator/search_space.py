"""From a sweep config to trials: the loss parameters a sweep fixes or searches (validated by each
loss's parameter model), Optuna's conditional search space, grid arms, and the plain-JSON
`TrialConfig` each trial's workers receive.

Optuna parameter names are qualified by their loss (`del.alpha`, `ntl_was.alpha`): each loss's
parameter is its own dimension, so TPE never pools one loss's alpha with another's. `lr` and
`loss` stay global. In `search.space` a key may be `<loss>.<param>` (that loss only) or a bare
`<param>` (every loss of the search that takes it, each its own Optuna parameter, the qualified
key winning).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainables.config import TrialConfig
from trainables.losses import LOSSES, ParamError, loss_params
from trainables.losses.params import check_range, check_value, validate_params

if TYPE_CHECKING:
    from orchestrator.sweep_file import GridConfig, SearchConfig, SweepConfig

GLOBAL_PARAMS = ("lr",)
"""Searched parameters that belong to no loss."""
CONTROL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A grid control arm's name (it becomes a value of the trials table's `control` column)."""


def optuna_name(loss: str, param: str) -> str:
    """The Optuna (and Tune config) name of loss `loss`'s parameter `param`."""
    return f"{loss}.{param}"


@dataclass(frozen=True)
class SearchedParam:
    """One Optuna dimension: a loss's parameter (or a global one, `loss` None) and its range."""

    loss: str | None
    param: str
    low: float
    high: float
    log: bool
    key: str
    """The `search.space` key it comes from."""

    @property
    def name(self) -> str:
        return self.param if self.loss is None else optuna_name(self.loss, self.param)


def _split_key(key: str) -> tuple[str | None, str]:
    loss, dot, param = key.partition(".")
    return (loss, param) if dot else (None, key)


def searched_params(
    search: SearchConfig, losses: tuple[str, ...] | None = None
) -> list[SearchedParam]:
    """Every dimension the search samples for `losses` (default: all of the search's), loss
    parameters in the order of the losses, global ones last.

    ValueError (naming the `search.space` key) for a loss that is not in search.losses, a
    parameter no loss of the search takes, a flag, or a range its loss's model does not allow."""
    chosen = tuple(losses or search.losses)
    found: dict[tuple[str, str], SearchedParam] = {}
    for key, r in search.space.items():
        loss, param = _split_key(key)
        where = f"search.space.{key}"
        if loss is None and param in GLOBAL_PARAMS:
            continue
        if loss is not None:
            if loss not in search.losses:
                raise ValueError(f"{where}: loss {loss!r} is not in search.losses")
            if param not in loss_params(loss):
                takes = ", ".join(loss_params(loss)) or "no parameters"
                raise ValueError(
                    f"{where}: loss {loss!r} does not take {param!r} (it takes: {takes})"
                )
            targets = [loss]
        else:
            takers = [n for n in search.losses if param in loss_params(n)]
            if not takers:
                raise ValueError(f"{where}: no loss in search.losses takes {param!r}")
            # the shorthand covers the losses without a range of their own
            targets = [n for n in takers if optuna_name(n, param) not in search.space]
        for target in targets:
            try:
                check_range(target, LOSSES[target].Params, param, r.low, r.high)
            except ParamError as err:
                raise ValueError(f"{where}: {err}") from None
            found[(target, param)] = SearchedParam(target, param, r.low, r.high, r.log, key)
    ordered = [found[k] for loss in chosen for k in found if k[0] == loss]
    ordered += [
        SearchedParam(None, key, r.low, r.high, r.log, key)
        for key, r in search.space.items()
        if key in GLOBAL_PARAMS
    ]
    return ordered


def check_search(search: SearchConfig) -> None:
    """Validate a search's space and its enqueued trials against the losses' parameter models;
    ValueError naming the key."""
    searched = {(p.loss, p.param) for p in searched_params(search)}
    losses = search.losses
    for i, point in enumerate(search.enqueue):
        loss = point.get("loss", losses[0] if len(losses) == 1 else None)
        if loss not in losses:
            raise ValueError(f"search.enqueue[{i}].loss: give one of {', '.join(losses)}")
        for param, value in point.items():
            where = f"search.enqueue[{i}].{param}"
            if param == "loss":
                continue
            owner = None if param in GLOBAL_PARAMS else str(loss)
            if owner is not None:
                if param not in loss_params(owner):
                    raise ValueError(f"{where}: loss {loss!r} does not take {param!r}")
                try:
                    check_value(owner, LOSSES[owner].Params, param, value)
                except ParamError as err:
                    raise ValueError(f"{where}: {err}") from None
            if (owner, param) not in searched:
                name = param if owner is None else optuna_name(owner, param)
                raise ValueError(
                    f"{where}: {name} is not searched (search.space has no range for it), so "
                    "Optuna would drop this value; add a range or leave it out"
                )


def check_grid(grid: GridConfig) -> None:
    """Validate a grid's fixed parameters against the losses' models; ValueError naming the key."""
    for name, given in grid.params.items():
        if name not in grid.losses:
            raise ValueError(f"grid.params.{name}: {name!r} is not in grid.losses")
        variants = grid.variants(name)
        if not variants:
            raise ValueError(f"grid.params.{name}: an empty list gives {name!r} no arm")
        for index, params in enumerate(variants):
            prefix = f"grid.params.{name}" + (f"[{index}]" if isinstance(given, list) else "")
            _check_grid_variant(name, params, prefix)
        duplicates = [v for i, v in enumerate(variants) if v in variants[:i]]
        if duplicates:
            raise ValueError(f"grid.params.{name}: variant {duplicates[0]} is listed twice")
    for name, control in grid.controls.items():
        _check_control(grid, name, control)


def _check_control(grid: GridConfig, name: str, control: Any) -> None:
    """One `grid.controls` entry; ValueError naming the key."""
    where = f"grid.controls.{name}"
    if not CONTROL_NAME.fullmatch(name):
        raise ValueError(f"{where}: a control's name is letters, digits, '_', '.', '-'")
    if control.loss not in grid.losses:
        raise ValueError(
            f"{where}.loss: {control.loss!r} is not in grid.losses ({', '.join(grid.losses)}); "
            "a control re-runs an arm of the grid"
        )
    _check_grid_variant(control.loss, control.params, f"{where}.params")
    if not any(control.seed_offsets.model_dump().values()):
        raise ValueError(
            f"{where}.seed_offsets: all zero, the control would repeat the {control.loss} arm; "
            "give e.g. {order: 1000}"
        )


def _check_grid_variant(name: str, params: dict[str, Any], prefix: str) -> None:
    """One parameter set of a grid loss against the loss's model; ValueError naming the key."""
    for param, value in params.items():
        where = f"{prefix}.{param}"
        if param not in loss_params(name):
            takes = ", ".join(loss_params(name)) or "no parameters"
            raise ValueError(f"{where}: loss {name!r} does not take {param!r} (it takes: {takes})")
        try:
            check_value(name, LOSSES[name].Params, param, value)
        except ParamError as err:
            raise ValueError(f"{where}: {err}") from None


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
    return ConditionalSpace(losses=chosen, params=tuple(searched_params(sweep.search, chosen)))


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
        owner, param = _split_key(key)
        if owner is None:
            plain[key] = value
        elif owner == loss:
            plain[param] = value
    return plain


def grid_arms(sweep: SweepConfig) -> list[dict[str, Any]]:
    """Every trial of a grid: losses (x their parameter variants) x seeds x presets, then each
    control arm x seeds x presets (`control` and `seed_offsets` set)."""
    grid = sweep.grid
    presets = grid.presets or [None]
    arms = []
    for loss, seed, preset in itertools.product(grid.losses, grid.seeds, presets):
        for params in grid.variants(loss):
            arm: dict[str, Any] = {"loss": loss, "seed": seed, **params}
            if preset is not None:
                arm["preset"] = preset
            arms.append(arm)
    for (name, control), seed, preset in itertools.product(
        grid.controls.items(), grid.seeds, presets
    ):
        arm = {"loss": control.loss, "seed": seed, **control.params, "control": name}
        arm["seed_offsets"] = control.seed_offsets.model_dump()
        if preset is not None:
            arm["preset"] = preset
        arms.append(arm)
    return arms


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
