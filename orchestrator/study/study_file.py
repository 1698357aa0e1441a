"""The study file: one YAML document that asks a question of a sweep, validated with pydantic
before anything starts (extra keys are refused; the field docstrings are the docs).

    question: Does DEL change generated exact match against MLE on pretrained SmolLM2?
    sweep: main.yaml                  # a grid sweep file (relative to this file), or inline
    reference: mle                    # the reference arm: a loss of the grid
    primary: {metric: gen/mathgen/exact_match, summary: final}   # trend: log_n: the slope
                                      # across grid.presets per decade of N (study 7)
    sesoi: 0.02                       # smallest effect of interest, the metric's units
    hypotheses: both                  # superiority, equivalence (TOST) or both
    alpha: 0.05
    power: 0.8
    secondaries: [{metric: gen/svamp/exact_match}]
    pilot: {seeds: [100, 101]}
    design: {max_seeds: pilot, looks: 3, spending: obrien-fleming, futility: true}
                                      # or {max_seeds: 9, seeds_per_look: 3}: looks at 3, 6, 9
    budget_hours: 12

`load_study(path)` reads and checks it, and loads its sweep; `StudyFileError` names the file and
the key (exit 2). The study runs the sweep's grid itself: its arms are the grid's, its seeds the
study's (the pilot's, then the main stage's `design.first_seed` onward), so the sweep file's own
`grid.seeds` is not used.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from analysis.selection import ValueSpec, parse_value
from analysis.sequential.design import looks_at
from analysis.sequential.trend import MIN_SIZES, Trend
from orchestrator.sweep.local_paths import absolute_trial_paths
from orchestrator.sweep.sweep_file import SweepConfig
from orchestrator.sweep.yaml_source import load_yaml
from records.metric_names import family


class StudyFileError(ValueError):
    """A study file that cannot run; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Metric(_Strict):
    """A metric of the trials and the per-trial value a study compares."""

    metric: str
    """A registered metric name (records/metric_names.py), e.g. eval/test/digit_acc."""
    summary: str = "final"
    """The per-trial value: `final` (last report), `last:K` (mean of the last K evaluations),
    `auc` (trapezoidal mean over the evaluated steps), or any `--value` of the analysis
    commands (step:N, auc:FROM-TO, …)."""
    direction: Literal["max", "min"] | None = None
    """Which way is better; null: the metric's registered direction."""
    trend: Trend | None = None
    """`log_n`: compare the arms' trend across model sizes, not their level. The sweep's
    `grid.presets` (at least 3, one learning rate each) become the x: for each seed, the paired
    differences treatment − reference at every size are regressed on log10 of the non-embedding
    parameters, and the seeds' slopes (the metric's units per decade of N; positive: the
    difference grows with N) are what the pilot's spread, the looks and the SESOI are about.
    Null: one paired difference a seed (analysis/sequential/trend.py)."""

    @field_validator("metric")
    @classmethod
    def _registered(cls, name: str) -> str:
        if family(name) is None:
            raise ValueError(f"{name!r} is not a metric numsweep's trials report")
        return name

    @field_validator("summary")
    @classmethod
    def _summary(cls, text: str) -> str:
        parse_value(text)  # ValueError names the bad text
        return text

    @property
    def value(self) -> ValueSpec:
        return parse_value(self.summary)


class Pilot(_Strict):
    """The pilot: a few paired seeds of the arms, run first, whose spread and cost size the
    main stage. Its trials go to the experiment `<sweep experiment>-pilot`."""

    seeds: list[int] = Field(default_factory=lambda: [1000, 1001, 1002], min_length=2)
    """Its seeds: at least 2 (a spread needs two pairs); none of the main stage's."""
    arms: list[str] | None = None
    """The grid's losses it runs (the reference among them); null: every loss of the grid."""
    params: dict[str, dict[str, float | bool] | list[dict[str, float | bool]]] | None = None
    """Which of a loss's parameter variants the pilot runs, where the grid has several (e.g.
    `{del: {alpha: 0.2, decay_base: 1.02, distance: false}}`: the hardest dose only); each one a
    variant of the grid's, written as it is there. Null: every variant of each pilot arm. The
    pilot's cost is priced per trial, so a pilot of fewer arms still prices every main arm."""


class Design(_Strict):
    """How the main stage looks at its paired seeds (docs/sequential.md)."""

    max_seeds: int | Literal["pilot"] = "pilot"
    """The most paired seeds it runs: `pilot` (the fewest at which the sequential design has
    the power, at the pilot's spread of the paired differences) or a number."""
    looks: int = Field(default=3, ge=1, le=10)
    """Looks, equally spaced in seeds up to the maximum (the first at 2 seeds or more)."""
    seeds_per_look: int | None = Field(default=None, ge=2, le=1000)
    """Paired seeds each look adds (instead of `looks`): with `max_seeds: 9`, 3 gives looks at
    3, 6, 9 (max_seeds must be a multiple of it, at most 10 looks); with `max_seeds: pilot`, the
    pilot's power analysis picks how many looks of this many seeds (the fewest multiple with the
    power). Not with `seeds`, `looks`, or spending `none`."""
    seeds: list[int] | None = None
    """The paired seeds at each look, e.g. [3, 6, 9] (instead of `looks` and `max_seeds`)."""
    spending: Literal["obrien-fleming", "pocock", "none"] = "obrien-fleming"
    """The α-spending function (Lan–DeMets O'Brien–Fleming- or Pocock-type); `none`: a fixed
    design, one look at the maximum."""
    futility: bool = True
    """A non-binding β-spending futility rule: stop when the SESOI is unlikely to be there."""
    first_seed: int = 0
    """The main stage's seeds are first_seed, first_seed + 1, …"""
    sd_bound: float | None = Field(default=None, gt=0.5, lt=1)
    """Size the design at this one-sided upper confidence limit of the pilot's sd (chi-square
    on the pilot's pairs − 1 degrees of freedom; e.g. 0.8), not at the estimate itself: a
    few-pair pilot's sd is often low by half. Null: the estimate."""

    @model_validator(mode="after")
    def _consistent(self) -> Design:
        if self.seeds_per_look is not None:
            self._per_look(self.seeds_per_look)
        elif self.seeds is not None:
            if len(self.seeds) < 1 or self.seeds[0] < 2 or sorted(set(self.seeds)) != self.seeds:
                raise ValueError("design.seeds: increasing seed counts, the first at least 2")
            if self.max_seeds not in ("pilot", self.seeds[-1]):
                raise ValueError("design.max_seeds: give it or design.seeds, not both")
        elif isinstance(self.max_seeds, int) and self.max_seeds < self.looks + 1:
            raise ValueError(
                f"design.max_seeds: {self.looks} looks need at least {self.looks + 1} seeds"
            )
        if self.spending == "none" and self.looks != 1 and self.seeds is None:
            raise ValueError("design.looks: spending `none` is a fixed design: one look")
        if self.spending == "none" and self.seeds is not None and len(self.seeds) != 1:
            raise ValueError("design.seeds: spending `none` is a fixed design: one look")
        return self

    def _per_look(self, step: int) -> None:
        """`seeds_per_look`'s refusals: what it cannot go with, a maximum it does not divide."""
        for key, given in (
            ("seeds", self.seeds is not None),
            ("looks", "looks" in self.model_fields_set),
        ):
            if given:
                raise ValueError(
                    f"design.seeds_per_look: give it or design.{key}, not both "
                    "(the looks are max_seeds / seeds_per_look)"
                )
        if self.spending == "none":
            raise ValueError(
                "design.seeds_per_look: spending `none` is a fixed design of one look at "
                "design.max_seeds"
            )
        if self.max_seeds == "pilot":
            return
        n = int(self.max_seeds)
        if n % step:
            lower, upper = step * (n // step), step * (n // step + 1)
            looks = ", ".join(map(str, range(step, lower + 1, step))) or "none"
            raise ValueError(
                f"design.seeds_per_look: {step} seeds a look do not reach max_seeds {n} (looks "
                f"at {looks}); give max_seeds {lower or upper}"
                + (f" or {upper}" if lower else "")
                + ", or the looks as design.seeds"
            )
        if n // step > 10:
            raise ValueError(
                f"design.seeds_per_look: max_seeds {n} in looks of {step} is {n // step} looks, "
                "more than 10"
            )

    @property
    def look_seeds(self) -> tuple[int, ...] | None:
        """The paired seeds at each look when the file fixes them (`seeds`, `max_seeds` with
        `looks` or `seeds_per_look`); None when the pilot's power analysis sizes them."""
        if self.seeds is not None:
            return tuple(self.seeds)
        if self.max_seeds == "pilot":
            return None
        n = int(self.max_seeds)
        if self.seeds_per_look is not None:
            return tuple(range(self.seeds_per_look, n + 1, self.seeds_per_look))
        return looks_at(n, 1 if self.spending == "none" else self.looks)


class StudyFile(_Strict):
    """A question asked of a sweep's arms, answered by a pilot and a group-sequential main
    stage (docs/studies.md)."""

    question: str = Field(min_length=1)
    """The question in words, as the report states it."""
    sweep: str | dict[str, Any]
    """The grid sweep file whose arms are compared: a path relative to the study file, or the
    sweep inline."""
    reference: str = "mle"
    """The reference arm: a loss of the grid; every other loss (or loss variant) is a treatment."""
    primary: Metric
    """The primary metric: the one the decision is taken on."""
    sesoi: float = Field(gt=0)
    """The smallest effect of interest, in the primary metric's units (with `primary.trend`:
    per decade of N): the effect the design is powered for and the equivalence margin (±SESOI)."""
    hypotheses: Literal["superiority", "equivalence", "both"] = "both"
    """superiority (one-sided: better, and its mirror, worse), equivalence (TOST within ±SESOI),
    or both (whichever a look decides first)."""
    alpha: float = Field(default=0.05, gt=0, lt=0.5)
    """One-sided significance level of each test (TOST's two tests each at α: a 1 − 2α CI)."""
    power: float = Field(default=0.8, gt=0, lt=1)
    """Power at a true difference of SESOI (superiority) or 0 (equivalence)."""
    secondaries: list[Metric] = Field(default_factory=list)
    """Secondary metrics: paired t-tests at the look the study stopped at, Holm-adjusted."""
    pilot: Pilot = Field(default_factory=Pilot)
    design: Design = Field(default_factory=Design)
    budget_hours: float = Field(gt=0)
    """The most trial-hours (summed wall time of its trials) the main stage may cost at its
    maximum; a design over it is refused before it is registered."""


@dataclass(frozen=True)
class Study:
    """A checked study file with its sweep loaded."""

    path: Path
    spec: StudyFile
    sweep: SweepConfig
    """The sweep as its file says (relative paths kept: what the registration records)."""

    @property
    def experiment(self) -> str:
        """The main stage's experiment."""
        return self.sweep.experiment

    @property
    def pilot_experiment(self) -> str:
        return f"{self.sweep.experiment}-pilot"

    def runnable_sweep(self) -> SweepConfig:
        """The sweep with its trial's relative file paths made absolute against the current
        directory (where a command line's paths are relative to; a Ray worker runs elsewhere)."""
        trial = absolute_trial_paths(self.sweep.trial, Path.cwd())
        return self.sweep.model_copy(update={"trial": trial})

    def content(self) -> dict[str, Any]:
        """What the registration locks: what the study file and its sweep say, as validated.
        Keys the files leave out are not in it, so a numsweep that adds a field (with its
        default) does not make a registered study's file look changed; `resolved()` is the whole
        of it, defaults included, which the record keeps for its readers."""
        return {
            "study": self.spec.model_dump(mode="json", exclude={"sweep"}, exclude_unset=True),
            "sweep": self.sweep.model_dump(mode="json", exclude_unset=True),
        }

    def resolved(self) -> dict[str, Any]:
        """The study and its sweep with every default filled in, as this numsweep runs them."""
        return {
            "study": self.spec.model_dump(mode="json", exclude={"sweep"}),
            "sweep": self.sweep.model_dump(mode="json"),
        }

    def content_hash(self) -> str:
        text = json.dumps(self.content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _describe(err: ValidationError, prefix: str = "") -> str:
    lines = []
    for e in err.errors():
        where = prefix + ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        lines.append(f"  {msg}" if not e["loc"] else f"  {where or '(top level)'}: {msg}")
    return "\n".join(lines)


def _read_yaml(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise StudyFileError(f"{path}: no such {what}")
    try:
        data = load_yaml(path.read_text()) or {}  # a key written twice: exit 2
    except yaml.YAMLError as err:
        raise StudyFileError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise StudyFileError(f"{path}: expected a mapping at the top level")
    return data


def _load_sweep(path: Path, spec: StudyFile) -> SweepConfig:
    if isinstance(spec.sweep, str):
        where, data = path.parent / spec.sweep, _read_yaml(path.parent / spec.sweep, "sweep file")
        prefix = f"{path}: sweep ({where}): "
    else:
        data, prefix = spec.sweep, f"{path}: "
    try:
        sweep = SweepConfig.model_validate(data)
    except ValidationError as err:
        keys = "" if isinstance(spec.sweep, str) else "sweep."
        raise StudyFileError(f"{prefix}invalid sweep:\n{_describe(err, keys)}") from err
    if sweep.mode != "grid":
        raise StudyFileError(f"{prefix}sweep.mode: a study compares a grid's arms, got search")
    return sweep


def _check_arms(path: Path, spec: StudyFile, sweep: SweepConfig) -> None:
    losses = sweep.grid.losses
    if spec.reference not in losses:
        raise StudyFileError(
            f"{path}: reference: {spec.reference!r} is not a loss of the grid ({', '.join(losses)})"
        )
    if len(losses) < 2:
        raise StudyFileError(
            f"{path}: sweep.grid.losses: a study needs a treatment beside "
            f"the reference {spec.reference!r}"
        )
    arms = spec.pilot.arms
    if arms is not None:
        unknown = [a for a in arms if a not in losses]
        if unknown or spec.reference not in arms:
            raise StudyFileError(
                f"{path}: pilot.arms: {', '.join(unknown) or 'the reference is missing'} "
                f"(the grid's losses: {', '.join(losses)}; the reference {spec.reference!r} "
                "must be among them)"
            )
    _check_pilot_params(path, spec, sweep)
    _check_trend(path, spec, sweep)
    main = spec.design
    if main.seeds is not None or isinstance(main.max_seeds, int):
        n = main.seeds[-1] if main.seeds is not None else int(main.max_seeds)
        clash = sorted(set(spec.pilot.seeds) & set(range(main.first_seed, main.first_seed + n)))
        if clash:
            raise StudyFileError(
                f"{path}: pilot.seeds: {clash} are also main-stage seeds "
                f"(design.first_seed {main.first_seed} onward)"
            )


def _check_pilot_params(path: Path, spec: StudyFile, sweep: SweepConfig) -> None:
    """`pilot.params`: each loss a pilot arm, each variant one of the grid's for that loss."""
    arms = spec.pilot.arms or sweep.grid.losses
    for loss, given in (spec.pilot.params or {}).items():
        where = f"{path}: pilot.params.{loss}"
        if loss not in arms:
            raise StudyFileError(f"{where}: not an arm of the pilot ({', '.join(arms)})")
        grid = [dict(v) for v in sweep.grid.variants(loss)]
        for variant in given if isinstance(given, list) else [given]:
            if dict(variant) not in grid:
                raise StudyFileError(
                    f"{where}: {variant} is not one of the grid's {loss} variants: {grid}"
                )


def _check_trend(path: Path, spec: StudyFile, sweep: SweepConfig) -> None:
    """A metric with `trend`: at least MIN_SIZES presets in the grid, one learning rate each (a
    size's rate goes with the size; several would make several trends)."""
    metrics = {"primary": spec.primary} | {
        f"secondaries.{i}": m for i, m in enumerate(spec.secondaries)
    }
    for key, metric in metrics.items():
        if metric.trend is None:
            continue
        presets = sweep.grid.presets or []
        if len(presets) < MIN_SIZES:
            raise StudyFileError(
                f"{path}: {key}.trend: {metric.trend} needs at least {MIN_SIZES} model sizes in "
                f"the sweep's grid.presets, got {len(presets)}"
                + (f" ({', '.join(presets)})" if presets else "")
            )
        several = [p for p in presets if len(sweep.grid.lrs_for(p)) > 1]
        if several:
            raise StudyFileError(
                f"{path}: {key}.trend: one learning rate a size, but sweep grid.lrs gives "
                f"{', '.join(several)} several"
            )


def load_study(path: str | Path) -> Study:
    """Read and check a study file and its sweep; StudyFileError names the file and the key."""
    path = Path(path)
    data = _read_yaml(path, "study file")
    try:
        spec = StudyFile.model_validate(data)
    except ValidationError as err:
        raise StudyFileError(f"{path}: invalid study file:\n{_describe(err)}") from err
    sweep = _load_sweep(path, spec)
    _check_arms(path, spec, sweep)
    return Study(path, spec, sweep)
