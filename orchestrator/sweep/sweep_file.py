"""The sweep file: one YAML document, validated with pydantic before anything starts.

    experiment: demo                  # results go under <results>/…/experiment=demo
    mode: search                      # search (Optuna) or grid
    trial: {model: …, data: …, train: …, eval: …}   # the base TrialConfig of every trial
    search: {num_trials: 4, losses: [mle, del], space: {del.alpha: {low: 0.01, high: 1, log: true}}}
    grid: {losses: [mle, del], seeds: [0, 1, 2], presets: [tiny, xs], params: {del: {alpha: 0.01}}}
    resources: {workers_per_trial: 1, cpus_per_worker: 1, max_concurrent_trials: 2}
    tracking: {tensorboard: true, mlflow: {uri: http://127.0.0.1:5000}, wandb: {project: p}}

`load_sweep(path, overrides)` reads the file, applies dotted command-line overrides
(`train.lr=3e-4` is short for `trial.train.lr=3e-4`; `search.num_trials=64`), and validates it:
the structure here, the loss parameters against each loss's parameter model (the search's and
the grid's own checks, through `trainables.losses.params`), the objective and early-stopping
metrics against the metric registry (`orchestrator.sweep.objectives`). Errors name the file and
the key (`SweepFileError`). Field docstrings are the docs. The trial's relative file paths (data,
benchmarks, a local model folder) are then made absolute against the current directory, since a
Ray Train worker runs in a folder of its own (`orchestrator.sweep.local_paths`).

The schema validates itself: the checks it runs import downward only (the losses, the metric
registry, `orchestrator.sweep.objectives`), and the modules that turn a sweep into trials
(`orchestrator.sweep.search_space`, the driver) import this one, never the other way round.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orchestrator.sweep import objectives
from orchestrator.sweep.local_paths import absolute_trial_paths
from orchestrator.sweep.yaml_source import DuplicateKeyError, load_yaml
from trainables.config import TrialConfig
from trainables.losses import LOSSES, ParamError, loss_params
from trainables.losses.params import check_range, check_value

GLOBAL_PARAMS = ("lr",)
"""Searched parameters that belong to no loss."""


def optuna_name(loss: str, param: str) -> str:
    """The Optuna (and Tune config) name of loss `loss`'s parameter `param`."""
    return f"{loss}.{param}"


def split_key(key: str) -> tuple[str | None, str]:
    """A `search.space` key (or an Optuna name) as (loss, param); loss None for a bare name."""
    loss, dot, param = key.partition(".")
    return (loss, param) if dot else (None, key)


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


class SweepFileError(ValueError):
    """A sweep file (or an override) that cannot run; the message names the file and the key."""


class _Strict(BaseModel):
    # allow_inf_nan: `lr: .inf` or `low: -.inf` is a typo, never a setting
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Range(_Strict):
    """A search range for one loss hyper-parameter (or the learning rate)."""

    low: float
    high: float
    log: bool = False
    """Sample uniformly in log space (both bounds must be > 0)."""

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise ValueError(f"need finite low <= high, got low={self.low}, high={self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"log ranges need low > 0, got low={self.low}")
        return self


class Objective(_Strict):
    metric: str = "eval/test/digit_acc"
    """A metric this sweep reports (`records.metric_names`; checked before anything runs)."""
    mode: Literal["max", "min"] = "max"


class SearchConfig(_Strict):
    num_trials: int = Field(4, ge=1)
    """Trials Optuna proposes."""
    losses: list[str] = Field(default_factory=lambda: ["mle", "ntl_was", "dist2", "del"])
    """Losses to choose from (a categorical parameter when more than one)."""
    space: dict[str, Range] = Field(default_factory=dict)
    """Ranges to sample: `<loss>.<param>` (e.g. `del.alpha`) for that loss's parameter, a bare
    `<param>` (e.g. `alpha`) for every loss in `losses` that takes it (each its own Optuna
    parameter `<loss>.<param>`; a qualified key wins), and `lr`. A parameter is sampled only in
    trials of its loss; the others keep their defaults. Every range must lie inside what the
    loss's parameter model allows."""
    objectives: list[Objective] = Field(default_factory=lambda: [Objective()])
    """What Optuna optimises (the last reported value of each trial)."""
    sampler: Literal["tpe", "random"] = "tpe"
    sampler_seed: int = 0
    enqueue: list[dict[str, float | str | bool]] = Field(default_factory=list)
    """Trials Optuna runs first, e.g. one per loss ([{loss: mle}, {loss: del, alpha: 0.01}]),
    with plain parameter names; each given parameter must be searched, the others are sampled.
    Only when the study is new (not on resume or extend)."""
    per_loss: bool = False
    """Run one Optuna study per loss (each `num_trials` trials) instead of one over all losses."""
    storage: str | None = None
    """Optuna storage: an RDB URL (sqlite:///…, postgresql://…, mysql://…) or a journal file
    (a path ending in .log or .journal). Default: SQLite `experiments/<E>/optuna.db` under a
    local results root (required for a remote results root)."""

    def searched_params(self, losses: tuple[str, ...] | None = None) -> list[SearchedParam]:
        """Every dimension the search samples for `losses` (default: all of the search's), loss
        parameters in the order of the losses, global ones last.

        ValueError (naming the `search.space` key) for a loss that is not in search.losses, a
        parameter no loss of the search takes, a flag, or a range its loss's model does not
        allow."""
        chosen = tuple(losses or self.losses)
        found: dict[tuple[str, str], SearchedParam] = {}
        for key, r in self.space.items():
            loss, param = split_key(key)
            where = f"search.space.{key}"
            if loss is None and param in GLOBAL_PARAMS:
                continue
            if loss is not None:
                if loss not in self.losses:
                    raise ValueError(f"{where}: loss {loss!r} is not in search.losses")
                if param not in loss_params(loss):
                    takes = ", ".join(loss_params(loss)) or "no parameters"
                    raise ValueError(
                        f"{where}: loss {loss!r} does not take {param!r} (it takes: {takes})"
                    )
                targets = [loss]
            else:
                takers = [n for n in self.losses if param in loss_params(n)]
                if not takers:
                    raise ValueError(f"{where}: no loss in search.losses takes {param!r}")
                # the shorthand covers the losses without a range of their own
                targets = [n for n in takers if optuna_name(n, param) not in self.space]
            for target in targets:
                try:
                    check_range(target, LOSSES[target].Params, param, r.low, r.high)
                except ParamError as err:
                    raise ValueError(f"{where}: {err}") from None
                found[(target, param)] = SearchedParam(target, param, r.low, r.high, r.log, key)
        ordered = [found[k] for loss in chosen for k in found if k[0] == loss]
        ordered += [
            SearchedParam(None, key, r.low, r.high, r.log, key)
            for key, r in self.space.items()
            if key in GLOBAL_PARAMS
        ]
        return ordered

    def check(self) -> None:
        """Validate the space and the enqueued trials against the losses' parameter models;
        ValueError naming the key."""
        searched = {(p.loss, p.param) for p in self.searched_params()}
        losses = self.losses
        for i, point in enumerate(self.enqueue):
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
                        f"{where}: {name} is not searched (search.space has no range for it), "
                        "so Optuna would drop this value; add a range or leave it out"
                    )


class SeedOffsets(_Strict):
    """What a control arm adds to each grid seed, per source (0 = that source keeps the seed)."""

    init: int = 0
    """Added to the model-initialisation seed."""
    data: int = 0
    """Added to the data seed (generated problems)."""
    order: int = 0
    """Added to the data-order seed."""


class ControlArm(_Strict):
    """A control arm: one loss (with fixed parameters) run on every grid seed (and preset) with
    some of its seeds moved, e.g. `{loss: mle, seed_offsets: {order: 1000}}` = the same model
    and data as the `mle` arm of each seed, another data order. Its trials keep the grid seed in
    `seed` (so they pair with the other arms' trials of that seed) and their own seeds in
    `seeds`; the trials table's `control` column holds the control's name."""

    loss: str = "mle"
    """A loss of `grid.losses`."""
    params: dict[str, float | bool] = Field(default_factory=dict)
    """Its fixed hyper-parameters (the others keep their defaults)."""
    seed_offsets: SeedOffsets
    """Per-source offsets from the grid seed; at least one must be non-zero."""


class GridConfig(_Strict):
    losses: list[str] = Field(default_factory=lambda: ["mle", "del"])
    seeds: list[int] = Field(default_factory=lambda: [0])
    presets: list[str] | None = None
    """Model presets; null = the trial's model."""
    lrs: list[float] | dict[str, list[float]] | None = None
    """Learning rates, one trial per rate (an axis beside losses, seeds and presets); null = the
    trial's `train.lr`. A mapping gives each preset its own grid, e.g. {tiny: [3e-3, 1e-2],
    s: [1e-3, 3e-3]} (one entry per preset of `presets`): a scaling study's per-size grid, which
    `analysis scaling` reads to pick each size's best rate."""
    params: dict[str, dict[str, float | bool] | list[dict[str, float | bool]]] = Field(
        default_factory=dict
    )
    """Fixed hyper-parameters per loss name, e.g. {del: {alpha: 0.01}}; a list makes one arm per
    entry (variants of one loss), e.g. {del: [{}, {distance: true}]} for DEL with and without its
    distance term. Parameters a variant does not give keep their defaults."""
    controls: dict[str, ControlArm] = Field(default_factory=dict)
    """Control arms by name, each run on every seed and preset beside the arms above, e.g.
    {reorder: {loss: mle, seed_offsets: {order: 1000}}}: trajectory noise (same model and data,
    another order) measured next to the losses' differences, paired by seed."""

    def variants(self, loss: str) -> list[dict[str, float | bool]]:
        """The parameter sets of `loss`'s arms (one, the defaults, when none are given)."""
        given = self.params.get(loss, {})
        return list(given) if isinstance(given, list) else [given]

    def lrs_for(self, preset: str | None) -> list[float | None]:
        """The learning rates of `preset`'s trials ([None]: the trial's own `train.lr`)."""
        if self.lrs is None:
            return [None]
        if isinstance(self.lrs, dict):
            return list(self.lrs[preset]) if preset is not None else [None]
        return list(self.lrs)

    def _check_lrs(self) -> None:
        """`grid.lrs`: positive, none twice, a mapping's keys exactly the presets."""
        if self.lrs is None:
            return
        if isinstance(self.lrs, dict):
            presets = self.presets or []
            if not presets:
                raise ValueError("grid.lrs: a mapping of presets to rates needs grid.presets")
            missing = [p for p in presets if p not in self.lrs]
            extra = [p for p in self.lrs if p not in presets]
            if missing or extra:
                raise ValueError(
                    "grid.lrs: one entry per preset of grid.presets"
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + (f"; not in grid.presets: {', '.join(extra)}" if extra else "")
                )
            grids = {f"grid.lrs.{p}": rates for p, rates in self.lrs.items()}
        else:
            grids = {"grid.lrs": self.lrs}
        for where, rates in grids.items():
            if not rates:
                raise ValueError(f"{where}: an empty list gives no trial")
            bad = [r for r in rates if not r > 0]
            if bad:
                raise ValueError(f"{where}: a learning rate is > 0, not {bad[0]}")
            if len(set(rates)) < len(rates):
                raise ValueError(f"{where}: a rate is listed twice ({rates})")

    def check(self) -> None:
        """Validate the fixed parameters against the losses' models; ValueError naming the key."""
        self._check_lrs()
        for name, given in self.params.items():
            if name not in self.losses:
                raise ValueError(f"grid.params.{name}: {name!r} is not in grid.losses")
            variants = self.variants(name)
            if not variants:
                raise ValueError(f"grid.params.{name}: an empty list gives {name!r} no arm")
            for index, params in enumerate(variants):
                prefix = f"grid.params.{name}" + (f"[{index}]" if isinstance(given, list) else "")
                _check_grid_variant(name, params, prefix)
            duplicates = [v for i, v in enumerate(variants) if v in variants[:i]]
            if duplicates:
                raise ValueError(f"grid.params.{name}: variant {duplicates[0]} is listed twice")
        for name, control in self.controls.items():
            self._check_control(name, control)

    def _check_control(self, name: str, control: ControlArm) -> None:
        """One `grid.controls` entry; ValueError naming the key."""
        where = f"grid.controls.{name}"
        if not CONTROL_NAME.fullmatch(name):
            raise ValueError(f"{where}: a control's name is letters, digits, '_', '.', '-'")
        if control.loss not in self.losses:
            raise ValueError(
                f"{where}.loss: {control.loss!r} is not in grid.losses "
                f"({', '.join(self.losses)}); a control re-runs an arm of the grid"
            )
        _check_grid_variant(control.loss, control.params, f"{where}.params")
        if not any(control.seed_offsets.model_dump().values()):
            raise ValueError(
                f"{where}.seed_offsets: all zero, the control would repeat the {control.loss} "
                "arm; give e.g. {order: 1000}"
            )


CONTROL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A grid control arm's name (it becomes a value of the trials table's `control` column)."""


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


class EarlyStopping(_Strict):
    """ASHA: stop the worse trials early at rungs of the reported step."""

    metric: str = "eval/test/ce"
    """A metric this sweep reports (checked like the objectives)."""
    mode: Literal["max", "min"] = "min"
    grace_period: int = Field(1, ge=1)
    """Reports a trial makes before it can be stopped."""
    reduction_factor: float = Field(2.0, gt=1)


class ResourcesConfig(_Strict):
    workers_per_trial: int = Field(1, ge=1)
    """Ray Train workers (data-parallel DeepSpeed ranks) per trial."""
    cpus_per_worker: float = Field(1.0, gt=0)
    gpus_per_worker: float = Field(0.0, ge=0)
    max_concurrent_trials: int | None = Field(None, ge=1)
    """Trials at once; null = as many as the cluster's CPUs/GPUs hold."""
    max_failures: int = Field(1, ge=0)
    """Ray Train worker-group restarts per trial (from the latest checkpoint), for each kind of
    failure: a worker that crashed, a worker node that was drained (preempted), a start of the
    workers that waited longer than `placement_timeout_s` for their resources."""
    placement_timeout_s: float = Field(600.0, gt=0)
    """How long one start of a trial's workers may wait for their CPUs/GPUs (Ray Train's
    worker-group start timeout; Ray's own default, 60 s, is retried without end). A trial that
    cannot be placed fails after (max_failures + 1) starts, naming what it waited for."""
    trial_max_failures: int = Field(0, ge=0)
    """Tune restarts of a failed trial (its Train run resumes from its latest checkpoint)."""

    @property
    def worker_resources(self) -> dict[str, float]:
        """What each of a trial's Ray Train workers holds."""
        per_worker = {"CPU": self.cpus_per_worker}
        if self.gpus_per_worker:
            per_worker["GPU"] = self.gpus_per_worker
        return per_worker


class MlflowTracking(_Strict):
    """An MLflow run per trial (Ray Tune's `MLflowLoggerCallback`)."""

    uri: str | None = None
    """Tracking URI: a server (http://127.0.0.1:5000), a database (sqlite:///mlflow.db) or a
    folder (file:///…); null = MLflow's own default (MLFLOW_TRACKING_URI, else ./mlruns)."""
    experiment: str | None = None
    """MLflow experiment name; null = the sweep's experiment name."""


class WandbTracking(_Strict):
    """A Weights & Biases run per trial (Ray Tune's `WandbLoggerCallback`)."""

    project: str
    """W&B project."""
    mode: Literal["online", "offline"] = "offline"
    """offline (the default) writes each run's files under its trial folder with no network;
    `wandb sync` uploads them later. online needs WANDB_API_KEY or `wandb login`."""


class TrackingConfig(_Strict):
    """Live tracking of every trial, by Ray Tune's logger callbacks: each trial is one run named
    with numsweep's trial id, with its parameters and every reported metric. Needs the optional
    dependencies: `pip install 'numsweep[tracking]'`."""

    tensorboard: bool = False
    """TensorBoard event files in each trial's folder under the experiment's Ray storage
    (`tensorboard --logdir <results>/experiments/<E>/ray`)."""
    mlflow: MlflowTracking | None = None
    wandb: WandbTracking | None = None


class SweepConfig(_Strict):
    experiment: str = Field("default", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Experiment name: the results partition and the Ray run name."""
    mode: Literal["search", "grid"] = "search"
    seed: int = 0
    """Seed of every trial in search mode (grid mode lists seeds)."""
    trial: TrialConfig = Field(default_factory=TrialConfig)
    """The base trial: model, data, train, eval (loss, seed and ids are filled per trial)."""
    search: SearchConfig = Field(default_factory=SearchConfig)
    grid: GridConfig = Field(default_factory=GridConfig)
    resources: ResourcesConfig = Field(default_factory=ResourcesConfig)
    early_stopping: EarlyStopping | None = None
    """ASHA early stopping; null (the default) runs every trial to the end."""
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    """TensorBoard, MLflow and W&B runs of the trials (none by default)."""

    @property
    def losses(self) -> list[str]:
        """The losses of this sweep's mode (`search.losses` or `grid.losses`)."""
        return list(self.search.losses if self.mode == "search" else self.grid.losses)

    def named_metrics(self) -> list[tuple[str, str]]:
        """Every metric name the sweep file gives, with its key: the search objectives (search
        mode) and the early-stopping metric."""
        named = []
        if self.mode == "search":
            named += [
                (f"search.objectives[{i}].metric", o.metric)
                for i, o in enumerate(self.search.objectives)
            ]
        if self.early_stopping is not None:
            named.append(("early_stopping.metric", self.early_stopping.metric))
        return named

    def reported_metrics(self, digits: bool = True) -> list[str]:
        """Every metric name a trial of this sweep reports (`orchestrator.sweep.objectives`)."""
        return objectives.reported_metrics(self.trial, self.losses, digits)

    def check_metrics(self, digits: bool = True) -> None:
        """ValueError naming the key of a metric the sweep file gives that no trial reports;
        `digits`: the tokenizer has single-digit tokens (preflight knows, the schema assumes)."""
        objectives.check_metrics(self.trial, self.losses, self.named_metrics(), digits)

    @model_validator(mode="after")
    def _losses_params_metrics(self) -> SweepConfig:
        losses = self.losses
        if not losses:
            raise ValueError(f"{self.mode}.losses: give at least one loss")
        for name in losses:
            if name not in LOSSES:
                raise ValueError(
                    f"{self.mode}.losses: unknown loss {name!r}; known: {', '.join(LOSSES)}"
                )
        if self.trial.control is not None:
            raise ValueError("trial.control: set per trial by grid.controls; leave it out")
        if self.mode == "search":
            self.search.check()
        else:
            self.grid.check()
        self.check_metrics()
        return self


def apply_override(data: dict[str, Any], dotted: str) -> None:
    """Set `a.b.c=value` in a nested dict; the value is parsed as YAML (numbers, lists, …).
    Keys of the base trial may omit the `trial.` prefix (`train.lr=3e-4`)."""
    if "=" not in dotted:
        raise SweepFileError(f"override {dotted!r}: expected KEY=VALUE")
    key, raw = dotted.split("=", 1)
    parts = key.strip().split(".")
    if parts[0] in TrialConfig.model_fields and parts[0] not in SweepConfig.model_fields:
        parts = ["trial", *parts]
    if parts[:2] == ["search", "space"] and len(parts) > 3 and parts[2] in LOSSES:
        # search.space.del.alpha.low=…: `del.alpha` is one key of search.space
        parts = [*parts[:2], f"{parts[2]}.{parts[3]}", *parts[4:]]
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise SweepFileError(f"override {dotted!r}: {part!r} is not a section")
        node = child
    node[parts[-1]] = yaml.safe_load(raw)


def non_finite(data: Any, where: str = "") -> list[str]:
    """The keys (`a.b[0].c`) of every float in `data` that is .inf, -.inf or .nan."""
    if isinstance(data, float) and not math.isfinite(data):
        return [where or "(top level)"]
    if isinstance(data, dict):
        return [k for key, v in data.items() for k in non_finite(v, f"{where}.{key}".lstrip("."))]
    if isinstance(data, list):
        return [k for i, v in enumerate(data) for k in non_finite(v, f"{where}[{i}]")]
    return []


def _describe(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        if not e["loc"] and e["type"] == "value_error":
            # a check across sections: its message starts with the key it is about
            lines.append(f"  {e['msg'].removeprefix('Value error, ')}")
            continue
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        lines.append(f"  {where}: {e['msg']}")
    return "\n".join(lines)


def load_sweep(
    path: str | Path, overrides: list[str] | None = None, base: Path | None = None
) -> SweepConfig:
    """Read, override and validate a sweep file; `SweepFileError` names the file and keys. The
    trial's relative file paths are made absolute against `base` (default: the current
    directory, where a command line's paths are relative to), `orchestrator.sweep.local_paths`."""
    path = Path(path)
    if not path.is_file():
        raise SweepFileError(f"{path}: no such sweep file")
    try:
        data = load_yaml(path.read_text()) or {}
    except DuplicateKeyError as err:
        raise SweepFileError(f"{path}: {err}; keep one") from err
    except yaml.YAMLError as err:
        raise SweepFileError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise SweepFileError(f"{path}: expected a mapping at the top level")
    for dotted in overrides or []:
        apply_override(data, dotted)
    # pydantic refuses them too (allow_inf_nan=False), but inside a union (`float | bool`) its
    # message lists every member; this one names the key once
    bad = non_finite(data)
    if bad:
        raise SweepFileError(
            f"{path}: {', '.join(bad)}: not a finite number (.inf, -.inf and .nan are refused)"
        )
    try:
        sweep = SweepConfig.model_validate(data)
    except ValidationError as err:
        raise SweepFileError(f"{path}: invalid sweep file:\n{_describe(err)}") from err
    trial = absolute_trial_paths(sweep.trial, Path.cwd() if base is None else base)
    return sweep.model_copy(update={"trial": trial})
