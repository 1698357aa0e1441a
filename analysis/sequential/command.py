"""The two commands of the sequential package.

`python -m analysis sequential --looks K --alpha A --spending obrien-fleming|pocock|none`: the
design's efficacy bounds on the z scale (JSON key `upper`), its non-binding futility bounds
(`lower`), the α and β each look spends, the inflation factor and the expected information at
no effect and at the effect it is powered for; with `--sd S --sesoi D` the seeds per look (K
looks, equally spaced, the fewest that reach `--power` on the t scale), their t bounds, and the
expected seeds at a true difference of 0 and of SESOI against the fixed design's.

`python -m analysis sequential-replay RESULTS --metric M --sesoi D [--seeds 3,6,9]`: where that
design would have stopped on a store already run, at what cost (analysis/sequential/replay.py;
JSON keys `decision`, `look`, `seeds`, `hours`, `fixed_hours`); `--trend log_n` judges each
seed's slope of the differences across model sizes, per decade of N (analysis/sequential/trend.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from scipy import stats

from analysis.command_start import freeze_lists
from analysis.result import (
    DASH,
    Column,
    Record,
    Result,
    Table,
    fmt,
    fmt_ci,
    fmt_signed,
    records_table,
)
from analysis.selection import FINAL, VALUE_FLAG, ValueSpec
from analysis.sequential.boundaries import Design, equal_fractions, group_sequential
from analysis.sequential.design import Hypotheses
from analysis.sequential.plan import Plan, plan
from analysis.sequential.replay import ArmReplay, DesignChoice, Question, Replay, replay
from analysis.sequential.small_n import check_seeds
from analysis.sequential.trend import UNIT, Trend
from analysis.settings_flags import ARMS_FLAG, flag
from analysis.trial_costs import hours
from records.errors import ResultsError
from records.reader import Store

Spending = Literal["obrien-fleming", "pocock", "none"]


def _check_design(alpha: float, power: float, looks: int, spending: str) -> None:
    """ResultsError naming the flag whose value is out of range."""
    if not 0 < alpha < 0.5:
        raise ResultsError(f"--alpha must be in (0, 0.5) (one-sided), got {alpha}")
    if not 0 < power < 1:
        raise ResultsError(f"--power must be in (0, 1), got {power}")
    if looks < 1:
        raise ResultsError(f"--looks must be >= 1, got {looks}")
    if spending == "none" and looks != 1:
        raise ResultsError(f"--spending none is a fixed design: --looks must be 1, got {looks}")


def _positive(value: float | None, name: str) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ResultsError(f"{name} must be > 0, got {value}")


@dataclass(frozen=True)
class SequentialSettings:
    """Options of the sequential command (`python -m analysis sequential --help`)."""

    looks: int = 3
    """Number of looks, equally spaced in information (--looks)."""
    alpha: float = 0.05
    """One-sided significance level of each test (--alpha)."""
    spending: Spending = "obrien-fleming"
    """α-spending function: Lan–DeMets O'Brien–Fleming-type or Pocock-type, or none (a fixed
    design of one look) (--spending)."""
    target_power: float = field(default=0.8, metadata=flag("--power"))
    """The power the futility bounds and the seeds are designed for (--power)."""
    no_futility: bool = False
    """No futility bounds: stop for efficacy only (--no-futility)."""
    sd: float | None = None
    """Standard deviation of the paired differences, from a pilot (--sd): with --sesoi, the
    seeds per look and the expected seeds against the fixed design's."""
    sesoi: float | None = None
    """Smallest effect of interest, the metric's units (--sesoi): the equivalence margin and the
    effect the seeds are powered for."""
    hypotheses: Hypotheses = "both"
    """What the seeds are planned for: superiority (one-sided, and its mirror), equivalence
    (TOST within ±SESOI), or both (--hypotheses)."""

    def __post_init__(self) -> None:
        _check_design(self.alpha, self.target_power, self.looks, self.spending)
        _positive(self.sd, "--sd")
        _positive(self.sesoi, "--sesoi")
        if (self.sd is None) != (self.sesoi is None):
            raise ResultsError("--sd and --sesoi go together: give both, or neither")

    def as_json(self) -> dict[str, Any]:
        return {
            "looks": self.looks,
            "alpha": self.alpha,
            "spending": self.spending,
            "power": self.target_power,
            "futility": not self.no_futility,
            "sd": self.sd,
            "sesoi": self.sesoi,
            "hypotheses": self.hypotheses,
        }


def _bound_records(d: Design) -> list[Record]:
    records = []
    for k, t in enumerate(d.fractions):
        records.append(
            {
                "look": k + 1,
                "fraction": t,
                "upper": d.upper[k],
                "nominal_p": _nominal_p(d.upper[k]),
                "alpha_spent": d.alpha_spent[k],
                "lower": None if d.lower is None else d.lower[k],
                "beta_spent": None if d.beta_spent is None else d.beta_spent[k],
            }
        )
    return records


def _nominal_p(z: float) -> float:
    return float(stats.norm.sf(z))


BOUND_COLUMNS = [
    Column("look", lambda r: str(r["look"])),
    Column("information", lambda r: fmt(r["fraction"], 3)),
    Column("efficacy z", lambda r: fmt(r["upper"], 5)),
    Column("nominal p", lambda r: fmt(r["nominal_p"], 3)),
    Column("α spent", lambda r: fmt(r["alpha_spent"], 3)),
    Column("futility z", lambda r: fmt(r["lower"], 5)),
    Column("β spent", lambda r: fmt(r["beta_spent"], 3)),
]


def sequential(settings: SequentialSettings) -> Result:
    """The design's bounds, and with --sd/--sesoi its seeds (see the module docstring)."""
    s = settings
    try:
        d = group_sequential(
            s.alpha,
            equal_fractions(s.looks),
            s.spending,
            power=s.target_power,
            futility=not s.no_futility,
        )
    except ValueError as err:
        raise ResultsError(str(err)) from err
    result = Result("sequential", "Group-sequential design")
    result.settings = s.as_json()
    result.header.append(_design_line(d))
    result.tables.append(
        records_table("bounds", "bounds on the z scale", BOUND_COLUMNS, _bound_records(d))
    )
    up0, up1 = d.expected_fraction(0.0), d.expected_fraction(d.drift)
    result.summary = {
        "upper": list(d.upper),
        "lower": None if d.lower is None else list(d.lower),
        "inflation": d.inflation,
        "expected_information": {"null": up0 * d.inflation, "alternative": up1 * d.inflation},
    }
    result.notes.append(
        f"z scale, one-sided α {s.alpha:g} per test; inflation factor {d.inflation:.4f} (maximum "
        f"information / the fixed design's); expected information / the fixed design's: "
        f"{up0 * d.inflation:.3f} with no effect, {up1 * d.inflation:.3f} at the effect the design "
        f"is powered for ({s.target_power:g}), futility rule obeyed"
    )
    if s.sd is not None and s.sesoi is not None:
        _add_plan(result, s)
    return result


def _design_line(d: Design) -> str:
    rule = (
        "no futility rule"
        if d.lower is None
        else f"non-binding β-spending futility rule (β = {1 - d.power:g}, same family)"
    )
    return f"{d.spending} spending, {d.looks} look(s), one-sided α {d.alpha:g}, {rule}"


def _add_plan(result: Result, s: SequentialSettings) -> None:
    assert s.sd is not None and s.sesoi is not None
    try:
        p = plan(
            s.sd,
            s.sesoi,
            looks=s.looks,
            alpha=s.alpha,
            spending=s.spending,
            power=s.target_power,
            hypotheses=s.hypotheses,
            futility=not s.no_futility,
        )
    except ValueError as err:
        raise ResultsError(str(err)) from err
    t = p.test
    nominal = t.nominal_t()
    looks = [
        {
            "look": k + 1,
            "seeds": n,
            "efficacy_t": t.efficacy_t[k],
            "nominal_t": nominal[k],
            "futility_t": None if t.futility_t is None else t.futility_t[k],
            "stop_at_zero": p.at_zero.stop_at[k],
            "stop_at_sesoi": p.at_sesoi.stop_at[k],
        }
        for k, n in enumerate(t.seeds)
    ]
    columns = [
        Column("look", lambda r: str(r["look"])),
        Column("seeds", lambda r: str(r["seeds"])),
        Column("efficacy t", lambda r: fmt(r["efficacy_t"], 4)),
        Column("nominal-p t", lambda r: fmt(r["nominal_t"], 4)),
        Column("futility t", lambda r: fmt(r["futility_t"], 4)),
        Column("P(stop) at Δ=0", lambda r: fmt(r["stop_at_zero"], 3)),
        Column(f"P(stop) at Δ={s.sesoi:g}", lambda r: fmt(r["stop_at_sesoi"], 3)),
    ]
    title = f"seeds per look, sd {s.sd:g}, SESOI {s.sesoi:g} ({s.hypotheses})"
    result.tables.append(records_table("looks", title, columns, looks))
    result.tables.append(_plan_table(p))
    result.summary.update(_plan_summary(p))
    result.notes.append(
        "t scale: each look's efficacy bound is calibrated so that the t tests spend the "
        "design's α exactly at these seeds (the nominal-p carry-over, shown beside it, is "
        "anticonservative at small n); expected seeds and probabilities by simulation of "
        f"{p.at_zero.studies:,} studies each (docs/sequential.md)"
    )


def _plan_summary(p: Plan) -> dict[str, Any]:
    return {
        "looks_at": list(p.test.seeds),
        "max_seeds": p.test.max_seeds,
        "fixed_seeds": p.fixed_seeds,
        "expected_seeds": {"zero": p.at_zero.expected_seeds, "sesoi": p.at_sesoi.expected_seeds},
        "power": p.power,
        "decisions": {"zero": p.at_zero.probability, "sesoi": p.at_sesoi.probability},
    }


def _plan_table(p: Plan) -> Table:
    records = [
        {
            "difference": op.difference,
            "expected_seeds": op.expected_seeds,
            "max_seeds": p.test.max_seeds,
            "fixed_seeds": p.fixed_seeds,
            **{f"p_{k}": v for k, v in op.probability.items()},
        }
        for op in (p.at_zero, p.at_sesoi)
    ]
    columns = [
        Column("true Δ", lambda r: fmt_signed(r["difference"])),
        Column("expected seeds", lambda r: fmt(r["expected_seeds"], 3)),
        Column("max seeds", lambda r: str(r["max_seeds"])),
        Column("fixed design", lambda r: str(r["fixed_seeds"])),
        *[
            Column(f"P({k})", lambda r, k=k: fmt(r[f"p_{k}"], 3))
            for k in ("superior", "inferior", "equivalent", "futile", "undecided")
        ],
    ]
    return records_table(
        "plan", f"sequential against fixed (power {p.power:.3f})", columns, records
    )


@dataclass(frozen=True)
class ReplaySettings:
    """Options of the sequential-replay command (`python -m analysis sequential-replay --help`)."""

    metric: str = field(metadata=flag("--metric", metavar="M"))
    """The primary metric (--metric)."""
    sesoi: float
    """Smallest effect of interest, the metric's units: the equivalence margin (--sesoi)."""
    value: ValueSpec = field(default=FINAL, metadata=VALUE_FLAG)
    """Per-trial value of the metric (--value): final, last:K, auc, ..."""
    reference: str = "mle"
    """The reference arm: a loss, or an arm's label (--reference)."""
    treatments: tuple[str, ...] = field(default=(), metadata=ARMS_FLAG)
    """Treatment arms' labels (--arms); empty: every arm with a reference but controls."""
    seeds: tuple[int, ...] = ()
    """Paired seeds at each look, e.g. 3,6,9 (--seeds); empty: --looks looks equally spaced
    over the pairs stored."""
    looks: int = 3
    """Number of looks when --seeds is not given (--looks)."""
    alpha: float = 0.05
    """One-sided significance level of each test (--alpha)."""
    spending: Spending = "obrien-fleming"
    """α-spending function (--spending)."""
    target_power: float = field(default=0.8, metadata=flag("--power"))
    """The power the futility bounds are designed for (--power)."""
    no_futility: bool = False
    """No futility bounds (--no-futility)."""
    hypotheses: Hypotheses = "both"
    """superiority, equivalence or both (--hypotheses)."""
    direction: Literal["max", "min"] | None = None
    """Which way the metric is better (--direction); default: its registered direction."""
    by: tuple[str, ...] = ("loss",)
    """Configuration columns that key an arm (--by)."""
    trend: Trend | None = None
    """`log_n`: judge each seed's slope of the paired differences across the model sizes on
    log10 of the non-embedding parameters, per decade of N; --sesoi is then a slope (--trend).
    Default: one paired difference a seed."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("treatments", "seeds", "by"))
        try:
            if self.seeds:
                check_seeds(self.seeds)
        except ValueError as err:
            raise ResultsError(f"--seeds: {err}") from err
        looks = len(self.seeds) or self.looks
        _check_design(self.alpha, self.target_power, looks, self.spending)
        _positive(self.sesoi, "--sesoi")

    def as_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": self.value.label,
            "sesoi": self.sesoi,
            "reference": self.reference,
            "seeds": list(self.seeds),
            "looks": self.looks,
            "alpha": self.alpha,
            "spending": self.spending,
            "power": self.target_power,
            "futility": not self.no_futility,
            "hypotheses": self.hypotheses,
            "trend": self.trend,
        }

    def question(self) -> Question:
        return Question(
            self.metric,
            self.sesoi,
            self.value,
            self.reference,
            self.treatments,
            self.hypotheses,
            self.direction,
            self.by,
            self.trend,
        )

    def choice(self) -> DesignChoice:
        return DesignChoice(
            self.seeds,
            self.looks,
            self.alpha,
            self.spending,
            self.target_power,
            not self.no_futility,
        )


def sequential_replay(store: Store, settings: ReplaySettings) -> Result:
    """Where the design would have stopped on `store` (see the module docstring)."""
    try:
        r = replay(store, settings.question(), settings.choice())
    except ValueError as err:
        raise ResultsError(str(err)) from err
    result = Result("sequential-replay", "Sequential design replayed on a store")
    result.settings = settings.as_json()
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    result.header.append(_replay_line(r))
    if settings.trend:
        result.header.append(
            f"primary: {settings.metric}, treatment − reference as a {UNIT} (one a seed)"
        )
    result.tables.append(_looks_table(r, settings.trend is not None))
    result.notes += r.notes
    result.notes.append(
        "each look judges the first pairs in the order they ran (the later start of the pair's "
        "trials); CI: the repeated confidence interval at 1 − 2α, valid at any look whatever the "
        "stopping rule; superiority tests Holm-adjusted over the treatments (docs/sequential.md)"
    )
    result.summary = {**r.as_summary(), "arms": [_arm_summary(a) for a in r.arms]}
    return result


def _replay_line(r: Replay) -> str:
    cost = (
        f"{hours(r.hours)} of {hours(r.fixed_hours)} trial-hours"
        if r.hours is not None and r.fixed_hours is not None
        else "no stored costs"
    )
    return (
        f"decision: {r.decision} at look {r.look} ({r.seeds} paired seeds of looks at "
        f"{', '.join(map(str, r.test.seeds))}); {cost}"
    )


def _arm_summary(a: ArmReplay) -> dict[str, Any]:
    return {
        "arm": a.arm,
        "reference": a.reference,
        "decision": a.decision,
        "look": a.look,
        "seeds": a.seeds,
        "estimate": a.estimate,
        "ci": list(a.ci),
        "equivalent": a.equivalent,
        "pairs": a.pairs,
    }


def _looks_table(r: Replay, trend: bool = False) -> Table:
    """Every look of every treatment; with a trend, Δ is the seeds' slope per decade of N."""
    records = []
    for a in r.arms:
        sign = a.orientation
        for look in a.looks:
            lo, hi = sorted((sign * look.ci[0], sign * look.ci[1]))
            records.append(
                {
                    "arm": a.arm,
                    "reference": a.reference,
                    "look": look.look,
                    "seeds": look.seeds,
                    "mean_diff": sign * look.mean,
                    "sd_diff": look.sd,
                    "t": look.t,
                    "ci_low": lo,
                    "ci_high": hi,
                    "bound": look.bound,
                    "futility_bound": look.futility_bound,
                    "decision": look.decision,
                    "reason": look.reason,
                }
            )
    columns = [
        Column("arm", lambda r: r["arm"]),
        Column("look", lambda r: str(r["look"])),
        Column("seeds", lambda r: str(r["seeds"])),
        Column("Δ slope/decade" if trend else "Δ mean", lambda r: fmt_signed(r["mean_diff"])),
        Column("repeated CI", lambda r: fmt_ci(r["ci_low"], r["ci_high"])),
        Column("t", lambda r: fmt(r["t"], 3)),
        Column("bound t", lambda r: fmt(r["bound"], 4)),
        Column(
            "futility t",
            lambda r: DASH if r["futility_bound"] is None else fmt(r["futility_bound"], 3),
        ),
        Column("decision", lambda r: r["decision"] if r["reason"] is None else r["reason"]),
    ]
    what = f"treatment − reference, {UNIT}" if trend else "treatment − reference"
    return records_table("looks", f"looks (Δ = {what})", columns, records)
