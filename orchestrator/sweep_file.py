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
the structure here, the loss parameters against each loss's parameter model
(`orchestrator.search_space`), the objective and early-stopping metrics against the metric
registry (`orchestrator.objectives`). Errors name the file and the key (`SweepFileError`).
Field docstrings are the docs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from orchestrator.objectives import check_metrics
from orchestrator.search_space import check_grid, check_search
from trainables.config import TrialConfig
from trainables.losses import LOSSES


class SweepFileError(ValueError):
    """A sweep file (or an override) that cannot run; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    """A metric this sweep reports (`analysis.metric_registry`; checked before anything runs)."""
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


class GridConfig(_Strict):
    losses: list[str] = Field(default_factory=lambda: ["mle", "del"])
    seeds: list[int] = Field(default_factory=lambda: [0])
    presets: list[str] | None = None
    """Model presets; null = the trial's model."""
    params: dict[str, dict[str, float | bool] | list[dict[str, float | bool]]] = Field(
        default_factory=dict
    )
    """Fixed hyper-parameters per loss name, e.g. {del: {alpha: 0.01}}; a list makes one arm per
    entry (variants of one loss), e.g. {del: [{}, {distance: true}]} for DEL with and without its
    distance term. Parameters a variant does not give keep their defaults."""

    def variants(self, loss: str) -> list[dict[str, float | bool]]:
        """The parameter sets of `loss`'s arms (one, the defaults, when none are given)."""
        given = self.params.get(loss, {})
        return list(given) if isinstance(given, list) else [given]


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
    """Ray Train worker-group restarts per trial (from the latest checkpoint)."""
    trial_max_failures: int = Field(0, ge=0)
    """Tune restarts of a trial whose driver failed (its Train run resumes from storage)."""


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

    @model_validator(mode="after")
    def _losses_params_metrics(self) -> SweepConfig:
        losses = self.search.losses if self.mode == "search" else self.grid.losses
        if not losses:
            raise ValueError(f"{self.mode}.losses: give at least one loss")
        for name in losses:
            if name not in LOSSES:
                raise ValueError(
                    f"{self.mode}.losses: unknown loss {name!r}; known: {', '.join(LOSSES)}"
                )
        if self.mode == "search":
            check_search(self.search)
        else:
            check_grid(self.grid)
        check_metrics(self)
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


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> SweepConfig:
    """Read, override and validate a sweep file; `SweepFileError` names the file and keys."""
    path = Path(path)
    if not path.is_file():
        raise SweepFileError(f"{path}: no such sweep file")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise SweepFileError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise SweepFileError(f"{path}: expected a mapping at the top level")
    for dotted in overrides or []:
        apply_override(data, dotted)
    try:
        return SweepConfig.model_validate(data)
    except ValidationError as err:
        raise SweepFileError(f"{path}: invalid sweep file:\n{_describe(err)}") from err
