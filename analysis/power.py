"""`python -m analysis power RESULTS`: how many seeds a study needs, from a pilot store.

For every arm against its baseline (the ablation's arms and pairing: same seed), each chosen
metric and per-trial value (`--value final,last:3,auc`, ...): the standard deviation of the
paired differences (with its chi-square interval), the minimal detectable effect (MDE) at the
pairs the store has, the power there for `--delta`, the seeds needed to detect `--delta` with
`--power` at `--alpha` (paired t-test, noncentral t; `--one-sided`), also at the upper end of the
sd's interval (a pilot's sd is itself uncertain), and the same for showing equivalence within
±`--sesoi` by TOST (true difference 0 assumed; analysis/paired_power.py). Where the pilot's
trials reported their cost (`analysis.trial_costs`), each plan is priced in core-hours and in
hours of wall time at the pilot's concurrency, and `--budget-hours` says which plans fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from analysis.arm_selection import ArmSelection, collect_seed_values
from analysis.arms import Arms, baseline_arm, plain_value
from analysis.command_start import started_result
from analysis.headline import headline
from analysis.paired_power import (
    check_probability,
    minimal_detectable_effect,
    sd_interval,
    seeds_needed,
    seeds_needed_tost,
    t_test_power,
    tost_power,
)
from analysis.result import (
    DASH,
    Column,
    Record,
    Result,
    fmt,
    fmt_ci,
    fmt_signed,
    records_table,
)
from analysis.seed_stats import EQUAL_RTOL, check_level
from analysis.seed_values import SeedValues
from analysis.selection import ValueSpec
from analysis.settings_flags import flag
from analysis.sweep_manifest import store_sampled
from analysis.trial_costs import concurrency, hours, per_trial_cost, trial_costs
from records.errors import ResultsError
from records.metric_names import direction, resolve
from records.reader import (
    Store,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)


def check_inputs(delta: float, alpha: float, power: float, sesoi: float | None) -> None:
    """ResultsError naming the flag whose value is out of range."""
    if not (delta > 0 and math.isfinite(delta)):
        raise ResultsError(f"--delta must be > 0, got {delta}")
    if sesoi is not None and not (sesoi > 0 and math.isfinite(sesoi)):
        raise ResultsError(f"--sesoi must be > 0, got {sesoi}")
    for value, name in ((alpha, "--alpha"), (power, "--power")):
        try:
            check_probability(value, name)
        except ValueError as err:
            raise ResultsError(str(err)) from err


@dataclass(frozen=True, kw_only=True)
class PowerSettings(ArmSelection):
    """Options of the power command (`python -m analysis power --help` names each flag): the
    arm selection it shares with `ablation` (`analysis.arm_selection`) and its own."""

    delta: float
    """The difference arm − baseline to detect (--delta), in the metric's units."""
    level: float = 0.95
    """Confidence level of the sd's chi-square interval (--level)."""
    alpha: float = 0.05
    """Significance level of the paired t-test and of TOST (--alpha)."""
    target_power: float = field(default=0.8, metadata=flag("--power"))
    """The power the seeds needed reach (--power)."""
    one_sided: bool = False
    """A one-sided paired t-test (--one-sided); two-sided otherwise."""
    sesoi: float | None = None
    """The equivalence margin of TOST (--sesoi); None: `delta`."""
    budget_hours: float | None = None
    """Hours of wall time the study may take on the pilot's cluster at the pilot's concurrency
    (--budget-hours): each plan says whether it fits."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_level(self.level)
        check_inputs(self.delta, self.alpha, self.target_power, self.sesoi)
        budget = self.budget_hours
        if budget is not None and not (budget > 0 and math.isfinite(budget)):
            raise ResultsError(f"--budget-hours must be > 0, got {budget}")

    @property
    def margin(self) -> float:
        """The TOST margin: --sesoi, default --delta."""
        return self.delta if self.sesoi is None else self.sesoi

    @property
    def sided(self) -> str:
        return "one-sided" if self.one_sided else "two-sided"

    def as_json(self) -> dict[str, Any]:
        """The settings a result's JSON reports (the numbers' provenance)."""
        return {
            "delta": self.delta,
            "sesoi": self.margin,
            "alpha": self.alpha,
            "power": self.target_power,
            "one_sided": self.one_sided,
            "level": self.level,
            "baseline": self.baseline,
            "values": [s.label for s in self.values],
            "budget_hours": self.budget_hours,
        }


def pair_power(diffs: Sequence[float], scale: float, settings: PowerSettings) -> dict[str, object]:
    """Every number of one row from the per-seed differences (`scale`: the largest |value|, for
    the all-equal test)."""
    alpha, power, one_sided = settings.alpha, settings.target_power, settings.one_sided
    delta, sesoi = settings.delta, settings.margin
    n = len(diffs)
    d = np.asarray(diffs, dtype=np.float64)
    out: dict[str, object] = {"n": n, "mean_diff": float(d.mean()) if n else None}
    empty = dict.fromkeys(
        [
            "sd_diff",
            "sd_ci_low",
            "sd_ci_high",
            "mde",
            "power_at_delta",
            "seeds_needed",
            "seeds_needed_sd_high",
            "tost_power",
            "seeds_needed_tost",
        ]
    )
    if n < 2:
        return {**out, **empty, "reason": f"{n} pair(s): no spread to plan from"}
    sd = float(np.std(d, ddof=1))
    if sd <= EQUAL_RTOL * scale:
        return {**out, **empty, "sd_diff": 0.0, "reason": "all differences equal: sd 0"}
    lo, hi = sd_interval(sd, n, settings.level)
    return {
        **out,
        "sd_diff": sd,
        "sd_ci_low": lo,
        "sd_ci_high": hi,
        "mde": minimal_detectable_effect(sd, n, alpha, power, one_sided),
        "power_at_delta": t_test_power(delta, sd, n, alpha, one_sided),
        "seeds_needed": seeds_needed(delta, sd, alpha, power, one_sided),
        "seeds_needed_sd_high": seeds_needed(delta, hi, alpha, power, one_sided),
        "tost_power": tost_power(sesoi, sd, n, alpha),
        "seeds_needed_tost": seeds_needed_tost(sesoi, sd, alpha, power),
        "reason": None,
    }


def _seeds(n: object) -> str:
    return f"> {1_000_000:,}" if n is None else str(n)


def _planned(show: Callable[[Record], str]) -> Callable[[Record], str]:
    """A cell of the plan, or the dash where the pilot gave no sd to plan with."""
    return lambda r: DASH if r["mde"] is None else show(r)


def _seeds_cell(r: Record) -> str:
    return f"{_seeds(r['seeds_needed'])} ({_seeds(r['seeds_needed_sd_high'])})"


def power_columns(delta: float, margin: float, level: float) -> list[Column]:
    """The power table's columns, each from one record of `pair_power`."""
    return [
        Column("arm", lambda r: r["arm"]),
        Column("baseline", lambda r: r["baseline_arm"]),
        Column("metric", lambda r: r["metric"]),
        Column("value", lambda r: r["value_kind"]),
        Column("pairs", lambda r: str(r["n"])),
        Column("Δ mean", lambda r: fmt_signed(r["mean_diff"])),
        Column(
            f"sd of Δ [{level * 100:g}% CI]",
            lambda r: (
                fmt(r["sd_diff"])
                if r["mde"] is None
                else f"{fmt(r['sd_diff'])} {fmt_ci(r['sd_ci_low'], r['sd_ci_high'])}"
            ),
        ),
        Column("MDE at pairs", _planned(lambda r: fmt(r["mde"], 3))),
        Column(f"power at Δ={delta:g}", _planned(lambda r: fmt(r["power_at_delta"], 2))),
        Column(
            f"seeds for Δ={delta:g} (sd at CI top)",
            _planned(_seeds_cell),
        ),
        Column(f"TOST power ±{margin:g}", _planned(lambda r: fmt(r["tost_power"], 2))),
        Column(
            f"seeds for TOST ±{margin:g}",
            lambda r: (
                f"{DASH} ({r['reason']})" if r["mde"] is None else _seeds(r["seeds_needed_tost"])
            ),
        ),
    ]


@dataclass(frozen=True)
class Pricing:
    """What a planned pair of arms costs per seed, from the pilot's own trials."""

    per_trial: dict[str, dict[str, float]]
    """Arm label -> the mean core_h, gpu_h and wall_h of its pilot trials."""
    concurrency: float
    """Trials the pilot ran at once, on average (`analysis.trial_costs.concurrency`)."""
    budget_hours: float | None

    def price(self, arm: str, base: str, seeds: object) -> dict[str, object]:
        """core_h, gpu_h and wall_h of `seeds` seeds of `arm` and `base` (None: unpriced)."""
        a, b = self.per_trial.get(arm), self.per_trial.get(base)
        if a is None or b is None or not isinstance(seeds, int):
            return {"core_h": None, "gpu_h": None, "wall_h": None, "fits": None}
        wall = seeds * (a["wall_h"] + b["wall_h"]) / self.concurrency
        fits = None if self.budget_hours is None else wall <= self.budget_hours
        return {
            "core_h": seeds * (a["core_h"] + b["core_h"]),
            "gpu_h": seeds * (a["gpu_h"] + b["gpu_h"]),
            "wall_h": wall,
            "fits": fits,
        }


def pricing(
    store: Store, trials: pl.DataFrame, arms: Arms, budget_hours: float | None
) -> Pricing | None:
    """The pilot's per-trial costs per arm (`trials`: its `load_trials` frame), None for a store
    whose trials report none."""
    costs = trial_costs(store)
    if costs is None:
        return None
    labels = dict(arms.members.select("trial_id", "arm").iter_rows())
    per_trial = per_trial_cost(costs, labels, arms.order)
    return Pricing(per_trial, concurrency(trials, costs), budget_hours)


def _hours_cell(key: str) -> Callable[[Record], str]:
    def cell(r: Record) -> str:
        core, wall = r.get(f"core_h{key}"), r.get(f"wall_h{key}")
        if core is None or wall is None:
            return DASH
        fits = r.get(f"fits{key}")
        verdict = "" if fits is None else (" fits" if fits else " over budget")
        return f"{hours(core)} / {hours(wall)}{verdict}"

    return cell


def _pair_record(
    arm: str,
    base: str,
    arms: Arms,
    metric: str,
    spec: ValueSpec,
    per: dict[tuple[str, str, ValueSpec], SeedValues],
    settings: PowerSettings,
    pricing: Pricing | None = None,
) -> Record:
    """One row: `arm` against `base` on `metric`'s `spec` value, over the seeds both ran, priced
    by `pricing` where the pilot reported its costs."""
    mine, theirs = per.get((arm, metric, spec), {}), per.get((base, metric, spec), {})
    common = sorted(set(mine) & set(theirs))
    a, b = [mine[s] for s in common], [theirs[s] for s in common]
    scale = max([abs(v) for v in a + b], default=0.0)
    rec = pair_power([x - y for x, y in zip(a, b, strict=True)], scale, settings)
    if pricing is not None:
        rec.update(pricing.price(arm, base, rec["seeds_needed"]))
        tost = pricing.price(arm, base, rec["seeds_needed_tost"])
        rec.update({f"{k}_tost": v for k, v in tost.items()})
    return {
        "arm": arm,
        **{k: plain_value(arms.key_values[arm][k]) for k in arms.keys},
        "baseline_arm": base,
        "metric": metric,
        "value_kind": spec.label,
        **rec,
    }


def _power_records(
    arms: Arms,
    chosen: Sequence[str],
    per: dict[tuple[str, str, ValueSpec], SeedValues],
    settings: PowerSettings,
    pricing: Pricing | None = None,
) -> list[Record]:
    """Every row of the table: each planned arm with a baseline, each metric and value kind
    (kinds that need a better direction only for metrics that have one)."""
    columns = [
        (m, s)
        for m in chosen
        for s in settings.values
        if not (s.needs_direction and not direction(m))
    ]
    records = []
    for arm in arms.order:
        if settings.only and arm not in settings.only:
            continue
        base, _ = baseline_arm(arms, arm, value=settings.baseline)
        if base is None:
            continue
        for metric, spec in columns:
            records.append(_pair_record(arm, base, arms, metric, spec, per, settings, pricing))
    return records


def _add_power_table(
    result: Result, records: list[Record], settings: PowerSettings, pricing: Pricing | None
) -> None:
    """The power table and the notes on its columns (and on its prices)."""
    s, sided, margin = settings, settings.sided, settings.margin
    title = (
        f"seeds needed: paired t-test ({sided}, α = {s.alpha:g}, power {s.target_power:g}) for "
        f"Δ = {s.delta:g}; TOST (α = {s.alpha:g}) for equivalence within ±{margin:g}"
    )
    columns = power_columns(s.delta, margin, s.level)
    if pricing is not None:
        columns += [
            Column(f"core-h / wall h for Δ={s.delta:g}", _hours_cell("")),
            Column(f"core-h / wall h for TOST ±{margin:g}", _hours_cell("_tost")),
        ]
    elif s.budget_hours is not None:
        result.notes.append(
            "--budget-hours: the pilot's trials report no cost (perf/wall_s, perf/cpu_s: a store "
            "written before numsweep recorded them), so no plan is priced"
        )
    result.tables.append(records_table("power", title, columns, records))
    result.notes.append(
        f"pairs: seeds both arms ran; sd of Δ: sample sd of the per-seed differences arm − "
        f"baseline, with its chi-square interval; MDE: the true difference the {sided} paired "
        f"t-test at α = {s.alpha:g} detects with power {s.target_power:g} at these pairs; seeds: "
        "the fewest pairs reaching that power (noncentral t), in brackets with the sd at the top "
        "of its interval; TOST: power and seeds to show |Δ| < "
        f"{margin:g} when the true difference is 0 (--sesoi, default --delta)"
    )


def power(store: Store, settings: PowerSettings) -> Result:
    """The power table (see the module docstring)."""
    trials, result = started_result(store, settings, "power", "Power from a pilot")
    if trials.height == 0:
        return result
    available = metric_names(store)
    chosen = resolve(settings.metrics, available) if settings.metrics else headline(available)
    if not chosen:
        result.notes.append("no held-out metrics: give --metric")
        return result
    s = settings
    arms = s.assign(trials, store_sampled(store))
    result.notes += arms.notes
    s.check_only(arms)
    latest, counts = read_latest(store, chosen)
    if counts.note():
        result.notes.append(counts.note())
    known = load_trials(store).select("experiment", "trial_id")
    per = collect_seed_values(latest, arms, s.values, known, result.notes)
    priced = pricing(store, trials, arms, s.budget_hours)
    records = _power_records(arms, chosen, per, s, priced)
    result.header.append(trial_summary(trials))
    if not records:
        result.notes.append(f"no arm with a {s.baseline} baseline: nothing to plan")
        return result
    _add_power_table(result, records, s, priced)
    if priced is not None:
        _price_notes(result, priced)
    return result


def _price_notes(result: Result, pricing: Pricing) -> None:
    per = "; ".join(
        f"{arm} {hours(c['core_h'])} core-h, {hours(c['wall_h'])} h wall"
        + (f", {hours(c['gpu_h'])} GPU-h" if c["gpu_h"] else "")
        for arm, c in pricing.per_trial.items()
    )
    result.notes.append(
        f"hours: seeds × (arm's + baseline's mean per-trial cost in the pilot); wall time at the "
        f"pilot's concurrency ({pricing.concurrency:.2g} trials at once). Per trial: {per}"
    )
    if pricing.budget_hours is not None:
        result.notes.append(
            f"budget: {pricing.budget_hours:g} h of wall time (--budget-hours); a plan over it "
            "is unaffordable as designed: redesign (fewer arms, a cheaper trial, a larger "
            "effect) rather than run it underpowered"
        )
