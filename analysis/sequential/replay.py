"""A sequential design applied to a store: where it would have stopped and what it would have cost.

The paired seeds of each treatment and its reference arm (the ablation's arms and pairing,
analysis/arms.py) are taken in the order they ran: a pair counts from the later of its two trials'
start times (the trials table's `start`). Each look judges the first n_k pairs' oriented
differences of the primary metric's per-trial value (`final`, `last:K`, `auc`, …:
analysis/selection.py) by `decision.evaluate_look`. A treatment stops at its first decision; the
study when every treatment has stopped. A store with fewer pairs than the next look needs ends
`undecided`, with that look's seeds as `next_seeds`: what a study that is still running adds next.

Several treatments (study 3's two doses): the superiority tests form one Holm family and the
inferiority tests another, as the studies registered them; each test runs at α/r, r the family's
hypotheses not yet rejected, and a rejection raises the others' level at once, re-judging the
look (the sequentially rejective group-sequential procedure of Maurer and Bretz 2013, here
without re-testing earlier looks, which only forgoes power). Equivalence is judged at α for each
treatment: "equivalent at every dose" is an intersection–union claim, which needs no correction.

With `trend` (analysis/sequential/trend.py) a unit is a seed across model sizes and its value
the slope of its paired differences on log10 N, per decade of N; the looks judge the slopes.

Costs come from the trials' own reports (analysis/trial_costs.py): `hours` are the trial-hours
(summed wall time) of the trials the sequential design would have run, `fixed_hours` of every
trial of these arms in the store; core-hours likewise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from analysis.arms import CONTROL, Arms, assign_arms, baseline_arm
from analysis.selection import FINAL, ValueSpec, select_values, summary_direction
from analysis.sequential.decision import Decision, LookResult, evaluate_look
from analysis.sequential.design import Hypotheses, SequentialTest, looks_at, sequential_test
from analysis.sequential.trend import SIZE_COLUMN, Trend, seed_slopes, sizes_of, with_sizes
from analysis.trial_costs import trial_costs
from records.errors import ResultsError
from records.reader import Store, current_trials, read_latest


@dataclass(frozen=True)
class Question:
    """What a replayed (or running) study asks of its store."""

    metric: str
    sesoi: float
    value: ValueSpec = FINAL
    reference: str = "mle"
    """The reference arm: a loss (its arm of the same configuration) or an arm's label."""
    treatments: tuple[str, ...] = ()
    """Arm labels; empty: every arm with a reference, control arms excepted."""
    hypotheses: Hypotheses = "both"
    direction: Literal["max", "min"] | None = None
    """Which way is better; None: the metric's registered direction."""
    by: tuple[str, ...] = ("loss",)
    """Configuration columns that key an arm (the ablation's --by)."""
    trend: Trend | None = None
    """`log_n`: each seed's value is the slope of its paired differences across the model sizes
    on log10 N (per decade of non-embedding parameters); None: one paired difference a seed."""


@dataclass(frozen=True)
class DesignChoice:
    """The sequential design to apply: its looks and error rates."""

    seeds: tuple[int, ...] = ()
    """Paired seeds at each look; empty: `looks` looks equally spaced over the pairs stored."""
    looks: int = 3
    alpha: float = 0.05
    spending: str = "obrien-fleming"
    power: float = 0.8
    futility: bool = True


@dataclass(frozen=True)
class ArmReplay:
    """One treatment against its reference."""

    arm: str
    reference: str
    pairs: int
    """Pairs the store holds (with a trend: seeds paired at every size)."""
    decision: Decision
    look: int
    """The look it stopped at (1-based), or the last look judged."""
    seeds: int
    estimate: float
    """Mean paired difference treatment − reference at that look, in the metric's units."""
    ci: tuple[float, float]
    """Its repeated confidence interval (1 − 2α), in the metric's units."""
    equivalent: bool
    looks: tuple[LookResult, ...]
    """Every look judged, on oriented differences (positive: the treatment better)."""
    orientation: float
    """+1 when higher is better, −1 when lower is: metric units = orientation × oriented."""


@dataclass(frozen=True)
class Replay:
    """Where the design stops on this store and what it costs (JSON: `as_summary`)."""

    decision: Decision
    look: int
    seeds: int
    """Paired seeds used: the most any treatment used."""
    hours: float | None
    fixed_hours: float | None
    core_hours: float | None
    fixed_core_hours: float | None
    arms: tuple[ArmReplay, ...]
    test: SequentialTest
    stopped: bool
    """The study stopped (every treatment decided or at its last look)."""
    next_seeds: int | None
    """Pairs the next look needs, while the study has not stopped."""
    fixed_trials: int
    """The distinct paired trials stored: what `fixed_hours` sums over."""
    notes: list[str] = field(default_factory=list)

    def as_summary(self) -> dict[str, object]:
        """The replay's answer: decision, look, seeds, hours, fixed_hours, and more."""
        return {
            "decision": self.decision,
            "look": self.look,
            "seeds": self.seeds,
            "hours": self.hours,
            "fixed_hours": self.fixed_hours,
            "core_hours": self.core_hours,
            "fixed_core_hours": self.fixed_core_hours,
            "looks_at": list(self.test.seeds),
            "stopped": self.stopped,
            "next_seeds": self.next_seeds,
        }


def _values(store: Store, trials: pl.DataFrame, arms: Arms, q: Question) -> pl.DataFrame:
    """Per trial of an arm: arm, seed_key, trial_id, value (finite), start, wall_h, core_h."""
    latest, _ = read_latest(store, [q.metric])
    if latest.height == 0:
        raise ResultsError(f"no values of metric {q.metric!r} in {store.root}")
    picked = select_values(latest, q.value).filter(pl.col("value").is_finite())
    rows = picked.join(arms.members, on=["experiment", "trial_id"]).join(
        trials.select("experiment", "trial_id", "start"), on=["experiment", "trial_id"]
    )
    costs = trial_costs(store)
    if costs is None:
        return rows.with_columns(wall_h=pl.lit(None, pl.Float64), core_h=pl.lit(None, pl.Float64))
    hours = costs.select(
        "experiment", "trial_id", wall_h=pl.col("wall_s") / 3600, core_h=pl.col("cpu_s") / 3600
    )
    return rows.join(hours, on=["experiment", "trial_id"], how="left")


def _pairs(rows: pl.DataFrame, arm: str, reference: str) -> pl.DataFrame:
    """The pairs of `arm` with `reference` on the seed, in the order they ran."""
    cols = ["seed_key", "trial_id", "value", "start", "wall_h", "core_h"]
    cols += [c for c in ("seed", "size", "n") if c in rows.columns]  # a trend's sizes
    mine = rows.filter(pl.col("arm") == arm).select(cols)
    theirs = rows.filter(pl.col("arm") == reference).select(cols)
    pairs = mine.join(theirs, on="seed_key", suffix="_ref")
    ran = pl.max_horizontal("start", "start_ref")
    seed = pl.col("seed_key").cast(pl.Int64, strict=False)  # seed 10 after seed 9
    pairs = pairs.with_columns(ran=ran, seed_order=seed)
    return pairs.sort(["ran", "seed_order", "seed_key"], nulls_last=True).drop("seed_order")


def _units(
    pairs: pl.DataFrame, q: Question, rows: pl.DataFrame, arms: tuple[str, str], notes: list[str]
) -> tuple[pl.DataFrame, list[float]]:
    """The pairs with `unit`, the place in run order of the unit each belongs to, and each
    unit's difference treatment − reference (metric units): a pair's own, or with a trend a
    seed's slope across the sizes (per decade of N)."""
    if q.trend is None:
        return pairs.with_row_index("unit"), (pairs["value"] - pairs["value_ref"]).to_list()
    return seed_slopes(pairs, sizes_of(rows, arms), arms[0], notes)


def _treatments(arms: Arms, q: Question) -> dict[str, str]:
    """Treatment arm -> its reference arm."""
    chosen = q.treatments or tuple(a for a in arms.order if arms.key_values[a].get(CONTROL) is None)
    found: dict[str, str] = {}
    for arm in chosen:
        if arm not in arms.key_values:
            raise ResultsError(f"unknown arm {arm!r}; arms: {', '.join(arms.order)}")
        ref, why = baseline_arm(arms, arm, value=q.reference)
        if ref is None and q.treatments:
            raise ResultsError(f"arm {arm!r} has no reference {q.reference!r}: {why}")
        if ref is not None:
            found[arm] = ref
    if not found:
        raise ResultsError(f"no arm to compare with the reference {q.reference!r}")
    return found


def _sign(q: Question) -> float:
    way = q.direction or summary_direction(q.value, q.metric)
    if way not in ("max", "min"):
        raise ResultsError(f"metric {q.metric!r} has no better direction: give the direction")
    return 1.0 if way == "max" else -1.0


def replay(store: Store, question: Question, choice: DesignChoice) -> Replay:
    """Apply the design `choice` to the store's paired seeds (see the module docstring)."""
    trials, notes = current_trials(store)
    if trials.height == 0:
        raise ResultsError(f"no finished trials in {store.root}")
    if "start" not in trials.columns:
        notes.append("the trials table has no start times: pairs are taken in seed order")
        trials = trials.with_columns(start=pl.lit(None, pl.Datetime("us", "UTC")))
    block = (SIZE_COLUMN,) if question.trend else ()
    arms = assign_arms(trials, question.by, baseline=question.reference, block=block)
    treatments = _treatments(arms, question)
    rows = _values(store, trials, arms, question)
    if question.trend:
        rows = with_sizes(store, trials, rows)
    pairs: dict[str, pl.DataFrame] = {}
    diffs: dict[str, list[float]] = {}
    sign = _sign(question)
    for arm, ref in treatments.items():
        pairs[arm], raw = _units(_pairs(rows, arm, ref), question, rows, (arm, ref), notes)
        diffs[arm] = [sign * d for d in raw]
    stored = min(len(d) for d in diffs.values())
    seeds = choice.seeds or looks_at(stored, choice.looks)
    tests = _tests(seeds, question, choice, len(treatments))
    judged = _judge(tests, diffs)
    arm_results = tuple(
        _arm(arm, treatments[arm], len(diffs[arm]), judged[arm], sign) for arm in treatments
    )
    look = max(a.look for a in arm_results)
    stopped = all(a.looks[-1].stop for a in arm_results if a.looks)
    next_seeds = None if stopped else tests[1].seeds[look] if look < len(seeds) else None
    costs, fixed_trials = _costs(pairs, {a.arm: a.seeds for a in arm_results})
    return Replay(
        _study_decision(arm_results),
        look,
        max(a.seeds for a in arm_results),
        *costs,
        arm_results,
        tests[1],
        stopped,
        next_seeds,
        fixed_trials,
        notes + _cost_notes(rows) + _trend_notes(question, rows),
    )


def _trend_notes(q: Question, rows: pl.DataFrame) -> list[str]:
    if q.trend is None:
        return []
    return [
        f"trend {q.trend}: a seed's value is the least-squares slope of its paired differences "
        f"at the {rows['size'].n_unique()} model sizes on log10 of the non-embedding parameters "
        "(the trials' model/params_non_embedding): the looks judge the seeds' slopes, per decade "
        "of N"
    ]


def _tests(
    seeds: Sequence[int], q: Question, c: DesignChoice, treatments: int
) -> dict[int, SequentialTest]:
    """The test at level α/r for r = 1..treatments (r = 1: the study's own)."""
    return {
        r: sequential_test(
            seeds,
            sesoi=q.sesoi,
            hypotheses=q.hypotheses,
            alpha=c.alpha / r,
            spending=c.spending,
            power=c.power,
            futility=c.futility,
        )
        for r in range(1, treatments + 1)
    }


def _judge(
    tests: dict[int, SequentialTest], diffs: dict[str, list[float]]
) -> dict[str, list[LookResult]]:
    """Every treatment's looks until it stops or its pairs run out, Holm within each look."""
    test = tests[1]
    judged: dict[str, list[LookResult]] = {a: [] for a in diffs}
    open_better, open_worse = set(diffs), set(diffs)
    for k, n in enumerate(test.seeds, start=1):
        active = [a for a in diffs if len(diffs[a]) >= n and not _stopped(judged[a])]
        results: dict[str, LookResult] = {}
        while True:  # re-judge the look while a rejection raises the others' levels
            for a in active:
                sup, inf = tests[max(len(open_better), 1)], tests[max(len(open_worse), 1)]
                results[a] = evaluate_look(test, k, diffs[a][:n], sup, inf)
            better = {a for a in active if results[a].decision == "superior"} & open_better
            worse = {a for a in active if results[a].decision == "inferior"} & open_worse
            if not better and not worse:
                break
            open_better -= better
            open_worse -= worse
        for a in active:
            judged[a].append(results[a])
    return judged


def _stopped(looks: list[LookResult]) -> bool:
    return bool(looks) and looks[-1].stop


def _arm(arm: str, ref: str, pairs: int, looks: list[LookResult], sign: float) -> ArmReplay:
    if not looks:
        raise ResultsError(f"arm {arm!r}: {pairs} pair(s) with {ref!r}, fewer than the first look")
    last = looks[-1]
    lo, hi = sorted((sign * last.ci[0], sign * last.ci[1]))
    return ArmReplay(
        arm,
        ref,
        pairs,
        last.decision,
        last.look,
        last.seeds,
        sign * last.mean,
        (lo, hi),
        last.equivalent,
        tuple(looks),
        sign,
    )


def _study_decision(arms: Sequence[ArmReplay]) -> Decision:
    """superior if any treatment is, else inferior if any is, else equivalent if all are, else
    futile once every treatment stopped, else undecided."""
    decisions = [a.decision for a in arms]
    for d in ("superior", "inferior"):
        if d in decisions:
            return d  # type: ignore[return-value]
    if all(d == "equivalent" for d in decisions):
        return "equivalent"
    if all(a.looks[-1].stop and d != "undecided" for a, d in zip(arms, decisions, strict=True)):
        return "futile"
    return "undecided"


def _costs(
    pairs: dict[str, pl.DataFrame], used: dict[str, int]
) -> tuple[tuple[float | None, ...], int]:
    """Trial-hours and core-hours of the trials used (the units before `used`), and of every
    paired trial stored; and how many trials that is."""
    runs, every = [], []
    for arm, p in pairs.items():
        for side in ("", "_ref"):
            cols = p.select(
                "unit",
                pl.col(f"trial_id{side}").alias("trial_id"),
                pl.col(f"wall_h{side}").alias("wall_h"),
                pl.col(f"core_h{side}").alias("core_h"),
            )
            every.append(cols)
            runs.append(cols.filter(pl.col("unit") < used[arm]))
    out: list[float | None] = []
    for frames in (runs, every):
        trials = pl.concat(frames).unique("trial_id")
        for col in ("wall_h", "core_h"):
            values = trials[col]
            out.append(None if values.null_count() else float(values.sum()))
    hours, core, fixed, fixed_core = out
    return (hours, fixed, core, fixed_core), trials.height


def _cost_notes(rows: pl.DataFrame) -> list[str]:
    if rows["wall_h"].null_count():
        return ["some trials reported no cost (perf/wall_s): hours are not given"]
    return []
