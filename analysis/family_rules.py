"""Verdicts on a family of component tests, each helper named for its rule, so that a study's
verdict code says which one it applies and cannot mix them up:

- `all_of` — intersection–union: the family's claim is "every component holds". It is supported
  iff EVERY component is significant (raw p < α) in the predicted direction. No multiplicity
  correction: the intersection–union test of level α needs none (Berger 1982); a Holm
  correction on top only costs power.
- `any_of` — union–intersection: the claim is "at least one component holds". It is supported
  iff at least one component is significant after Holm's correction over the family (which
  controls the family-wise error rate) in the predicted direction and none is significant
  against it.

Both call a family "not supported" when a component is significant (by the rule's p) against the
prediction, and "inconclusive" otherwise. A component without a test (too few seeds) leaves the
family inconclusive under `all_of`, and counts as not significant under `any_of`.

- `compare_arms` — arms against one baseline by the three families a study registers to ask
  "does an arm help, hurt, or make no difference within ±SESOI?": one-sided `greater` tests
  (`any_of`), one-sided `less` tests (`any_of`, predicted lower) and TOSTs at ±SESOI (`all_of`:
  the TOST's claim |Δ| < SESOI has no sign, so its component's estimate is the margin left,
  SESOI − |Δ|, predicted positive; a TOST p < α implies it is).
- `interval_rule` — one estimate's predicted sign, judged by its confidence interval: supported
  when the interval lies wholly on the predicted side of 0, not supported when wholly on the
  other, inconclusive when it covers 0 (or there is none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.seed_stats import adjust_p

ALL_OF = "all_of: intersection-union, supported iff every component p < alpha, no correction"
ANY_OF = "any_of: supported iff at least one Holm-adjusted p < alpha (none against)"


@dataclass(frozen=True)
class Component:
    """One test of a family: its name, the predicted sign of the difference (+1 / −1), the
    estimated difference and its raw p (None: no test)."""

    name: str
    predicted: int
    estimate: float | None
    p: float | None


@dataclass(frozen=True)
class FamilyVerdict:
    rule: str
    verdict: str
    alpha: float
    results: dict[str, str] = field(default_factory=dict)
    """component name -> "as predicted", "against", "n.s." or "no test"."""
    p_used: dict[str, float | None] = field(default_factory=dict)
    """component name -> the p the rule judged it by (raw for all_of, Holm for any_of)."""


def _judge(c: Component, p: float | None, alpha: float) -> str:
    if p is None or c.estimate is None:
        return "no test"
    if p >= alpha:
        return "n.s."
    return "as predicted" if (c.estimate > 0) == (c.predicted > 0) else "against"


def all_of(components: Sequence[Component], alpha: float = 0.05) -> FamilyVerdict:
    """Intersection–union rule (see the module docstring): raw p-values, no correction."""
    p_used = {c.name: c.p for c in components}
    results = {c.name: _judge(c, c.p, alpha) for c in components}
    values = list(results.values())
    if values and all(r == "as predicted" for r in values):
        verdict = "supported"
    elif "against" in values:
        verdict = "not supported"
    else:
        verdict = "inconclusive"
    return FamilyVerdict(ALL_OF, verdict, alpha, results, p_used)


def any_of(components: Sequence[Component], alpha: float = 0.05) -> FamilyVerdict:
    """ "At least one" rule (see the module docstring): Holm-adjusted over the tested components."""
    tested = [c for c in components if c.p is not None]
    holm = dict(zip([c.name for c in tested], adjust_p([c.p for c in tested], "holm"), strict=True))
    p_used = {c.name: holm.get(c.name) for c in components}
    results = {c.name: _judge(c, p_used[c.name], alpha) for c in components}
    values = list(results.values())
    if "against" in values:
        verdict = "not supported"
    elif "as predicted" in values:
        verdict = "supported"
    else:
        verdict = "inconclusive"
    return FamilyVerdict(ANY_OF, verdict, alpha, results, p_used)


def interval_rule(low: float | None, high: float | None, predicted: int) -> str:
    """The verdict on "the estimate's sign is `predicted`" (+1 / −1) from its interval [low,
    high] (see the module docstring); an interval touching 0 is inconclusive."""
    if low is None or high is None:
        return "inconclusive"
    below, above = high < 0, low > 0
    predicted_side, other_side = (below, above) if predicted < 0 else (above, below)
    return "supported" if predicted_side else "not supported" if other_side else "inconclusive"


Record = Mapping[str, Any]
"""An ablation's paired-test record (mean_diff, p, tost_p, …), or None where the arm has none."""


@dataclass(frozen=True)
class Comparison:
    """Arms against one baseline (see `compare_arms`): the three families' verdicts."""

    helps: FamilyVerdict
    """One-sided `greater` tests, any_of (Holm over the arms)."""
    hurts: FamilyVerdict
    """One-sided `less` tests predicting "lower", any_of: "as predicted" is an arm worse."""
    equivalent: FamilyVerdict
    """TOSTs at ±SESOI, all_of (every arm within the margin)."""

    def better(self, arm: str) -> bool:
        return self.helps.results.get(arm) == "as predicted"

    def worse(self, arm: str) -> bool:
        return self.hurts.results.get(arm) == "as predicted"

    def within(self, arm: str) -> bool:
        """The arm's TOST shows it within ±SESOI of the baseline."""
        return self.equivalent.results.get(arm) == "as predicted"

    def status(self, arm: str) -> str:
        """worse / better, by less than the SESOI / better / equivalent / inconclusive."""
        if self.worse(arm):
            return "worse"
        if self.better(arm):
            return "better, by less than the SESOI" if self.within(arm) else "better"
        return "equivalent" if self.within(arm) else "inconclusive"

    @property
    def superior(self) -> str:
        """ "Some arm beats the baseline": not supported when an arm is significantly worse,
        supported when one is significantly better, inconclusive otherwise."""
        if self.hurts.verdict == "supported":
            return "not supported"
        return "supported" if self.helps.verdict == "supported" else "inconclusive"

    @property
    def equivalence(self) -> str:
        """ "Every arm is within ±SESOI of the baseline": supported or inconclusive."""
        return "supported" if self.equivalent.verdict == "supported" else "inconclusive"


def compare_arms(
    greater: Mapping[str, Record | None],
    less: Mapping[str, Record | None],
    sesoi: float,
    alpha: float = 0.05,
) -> Comparison:
    """Each arm's record of the one-sided `greater` test with its TOST at ±`sesoi` (`greater`)
    and of the one-sided `less` test (`less`), judged by the three families of the module
    docstring; an arm without a record (or a test) has no test in any."""

    def component(record: Record | None, name: str, predicted: int) -> Component:
        record = record or {}
        return Component(name, predicted, record.get("mean_diff"), record.get("p"))

    def tost(record: Record | None, name: str) -> Component:
        if record is None or record.get("mean_diff") is None:
            return Component(name, +1, None, None)
        return Component(name, +1, sesoi - abs(record["mean_diff"]), record.get("tost_p"))

    return Comparison(
        helps=any_of([component(greater.get(a), a, +1) for a in greater], alpha),
        hurts=any_of([component(less.get(a), a, -1) for a in greater], alpha),
        equivalent=all_of([tost(greater.get(a), a) for a in greater], alpha),
    )
