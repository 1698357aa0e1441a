"""`python -m analysis power RESULTS`: how many seeds a study needs, from a pilot store.

For every arm against its baseline (the ablation's arms and pairing: same seed), each chosen
metric and per-trial value (`--value final,last:3,auc`, ...): the standard deviation of the
paired differences (with its chi-square interval), the minimal detectable effect (MDE) at the
pairs the store has, the power there for `--delta`, the seeds needed to detect `--delta` with
`--power` at `--alpha` (paired t-test, noncentral t; `--one-sided`), also at the upper end of the
sd's interval (a pilot's sd is itself uncertain), and the same for showing equivalence within
±`--sesoi` by TOST (true difference 0 assumed; analysis/power_stats.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from analysis.ablation import collect_seed_values
from analysis.arms import assign_arms, baseline_arm, plain_value
from analysis.headline import headline
from analysis.metric_registry import direction, resolve
from analysis.power_stats import (
    check_probability,
    minimal_detectable_effect,
    sd_interval,
    seeds_needed,
    seeds_needed_tost,
    t_test_power,
    tost_power,
)
from analysis.seed_stats import EQUAL_RTOL, check_level
from analysis.selection import FINAL, ValueSpec
from analysis.store import (
    DEFAULT_STATUSES,
    ResultsError,
    Store,
    current_trials,
    load_trials,
    metric_names,
    read_latest,
    trial_summary,
)
from analysis.table import (
    DASH,
    Column,
    Record,
    Result,
    fmt,
    fmt_ci,
    fmt_signed,
    records_table,
)


def check_inputs(delta: float, alpha: float, power: float, sesoi: float | None) -> None:
    """ResultsError naming the flag whose value is out of range."""
    if not (delta > 0 and math.isfinite(delta)):
        raise ResultsError(f"--delta must be > 0, got {delta}")
    if sesoi is not None and not (sesoi > 0 and math.isfinite(sesoi)):
        raise ResultsError(f"--sesoi must be > 0, got {sesoi}")
    for value, flag in ((alpha, "--alpha"), (power, "--power")):
        try:
            check_probability(value, flag)
        except ValueError as err:
            raise ResultsError(str(err)) from err


def pair_power(
    diffs: Sequence[float],
    scale: float,
    *,
    delta: float,
    sesoi: float,
    alpha: float,
    power: float,
    one_sided: bool,
    level: float,
) -> dict[str, object]:
    """Every number of one row from the per-seed differences (`scale`: the largest |value|, for
    the all-equal test)."""
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
    lo, hi = sd_interval(sd, n, level)
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
            _planned(
                lambda r: f"{_seeds(r['seeds_needed'])} ({_seeds(r['seeds_needed_sd_high'])})"
            ),
        ),
        Column(f"TOST power ±{margin:g}", _planned(lambda r: fmt(r["tost_power"], 2))),
        Column(
            f"seeds for TOST ±{margin:g}",
            lambda r: (
                f"{DASH} ({r['reason']})" if r["mde"] is None else _seeds(r["seeds_needed_tost"])
            ),
        ),
    ]


def power(
    store: Store,
    *,
    delta: float,
    metrics: Sequence[str] | None = None,
    values: Sequence[ValueSpec] = (FINAL,),
    by: Sequence[str] = ("loss",),
    pool: Sequence[str] = (),
    block: Sequence[str] = (),
    only: Sequence[str] = (),
    baseline: str = "mle",
    statuses: Sequence[str] = DEFAULT_STATUSES,
    level: float = 0.95,
    alpha: float = 0.05,
    target_power: float = 0.8,
    one_sided: bool = False,
    sesoi: float | None = None,
) -> Result:
    """The power table (see the module docstring)."""
    check_level(level)
    check_inputs(delta, alpha, target_power, sesoi)
    margin = delta if sesoi is None else sesoi
    trials, notes = current_trials(store, statuses)
    result = Result("power", "Power from a pilot", notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    result.settings = {
        "delta": delta,
        "sesoi": margin,
        "alpha": alpha,
        "power": target_power,
        "one_sided": one_sided,
        "level": level,
        "baseline": baseline,
        "values": [s.label for s in values],
    }
    if trials.height == 0:
        return result
    available = metric_names(store)
    chosen = resolve(metrics, available) if metrics else headline(available)
    if not chosen:
        result.notes.append("no held-out metrics: give --metric")
        return result
    arms = assign_arms(trials, by, pool=pool, block=block, baseline=baseline)
    result.notes += arms.notes
    unknown = [a for a in only if a not in arms.key_values]
    if unknown:
        raise ResultsError(
            f"unknown arm {', '.join(map(repr, unknown))} for --arms; arms: {', '.join(arms.order)}"
        )
    latest, counts = read_latest(store, chosen)
    if counts.note():
        result.notes.append(counts.note())
    known = load_trials(store).select("experiment", "trial_id")
    per = collect_seed_values(latest, arms, values, known, result.notes)
    columns = [
        (m, s) for m in chosen for s in values if not (s.needs_direction and not direction(m))
    ]
    records = []
    for arm in arms.order:
        if only and arm not in only:
            continue
        base, _ = baseline_arm(arms, arm, value=baseline)
        if base is None:
            continue
        for metric, spec in columns:
            mine, theirs = per.get((arm, metric, spec), {}), per.get((base, metric, spec), {})
            common = sorted(set(mine) & set(theirs))
            a, b = [mine[s] for s in common], [theirs[s] for s in common]
            scale = max([abs(v) for v in a + b], default=0.0)
            rec = pair_power(
                [x - y for x, y in zip(a, b, strict=True)],
                scale,
                delta=delta,
                sesoi=margin,
                alpha=alpha,
                power=target_power,
                one_sided=one_sided,
                level=level,
            )
            rec = {
                "arm": arm,
                **{k: plain_value(arms.key_values[arm][k]) for k in arms.keys},
                "baseline_arm": base,
                "metric": metric,
                "value_kind": spec.label,
                **rec,
            }
            records.append(rec)
    result.header.append(trial_summary(trials))
    sided = "one-sided" if one_sided else "two-sided"
    if not records:
        result.notes.append(f"no arm with a {baseline} baseline: nothing to plan")
        return result
    title = (
        f"seeds needed: paired t-test ({sided}, α = {alpha:g}, power {target_power:g}) for "
        f"Δ = {delta:g}; TOST (α = {alpha:g}) for equivalence within ±{margin:g}"
    )
    columns = power_columns(delta, margin, level)
    result.tables.append(records_table("power", title, columns, records))
    result.notes.append(
        f"pairs: seeds both arms ran; sd of Δ: sample sd of the per-seed differences arm − "
        f"baseline, with its chi-square interval; MDE: the true difference the {sided} paired "
        f"t-test at α = {alpha:g} detects with power {target_power:g} at these pairs; seeds: the "
        "fewest pairs reaching that power (noncentral t), in brackets with the sd at the top of "
        "its interval; TOST: power and seeds to show |Δ| < "
        f"{margin:g} when the true difference is 0 (--sesoi, default --delta)"
    )
    return result
