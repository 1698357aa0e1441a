"""How many paired seeds a sequential study needs, from a pilot's spread, against the fixed
design's.

The fixed design's seeds are exact (analysis/paired_power.py: the noncentral t for the one-sided
test of Δ = SESOI, quadrature for TOST at a true difference of 0; with both hypotheses, the larger).
The sequential design's maximum is the fewest seeds, in K looks equally spaced, at which its own
t-scale procedure (calibrated bounds, futility rule, decisions as a look takes them) reaches the
power, by simulation (simulate.py): P(superior) at a true difference of +SESOI for superiority,
P(equivalent) at 0 for equivalence, both for both. Expected seeds are given at a true difference
of 0 and of SESOI: under the null of one claim and the alternative of the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.paired_power import seeds_needed, seeds_needed_tost
from analysis.sequential.design import Hypotheses, SequentialTest, looks_at, sequential_test
from analysis.sequential.simulate import Operating, operating

MAX_FACTOR = 4
"""The search for the maximum stops at this many times the fixed design's seeds (plus 20)."""
MAX_LOOKS = 10
"""The most looks a design of a fixed number of seeds a look may grow to."""


@dataclass(frozen=True)
class Plan:
    """A sequential design sized for a pilot's spread."""

    test: SequentialTest
    sd: float
    """The paired differences' standard deviation the plan assumes."""
    target_power: float
    fixed_seeds: int
    """Seeds of the fixed design (one look) with the same α, power and hypotheses."""
    at_zero: Operating
    """Operating characteristics at a true difference of 0."""
    at_sesoi: Operating
    """At a true difference of +SESOI."""

    @property
    def power(self) -> float:
        """The power the plan reaches: P(superior | +SESOI), P(equivalent | 0), or the smaller."""
        sup = self.at_sesoi.probability["superior"]
        eqv = self.at_zero.probability["equivalent"]
        return {"superiority": sup, "equivalence": eqv, "both": min(sup, eqv)}[self.test.hypotheses]


def fixed_seeds(
    sd: float, sesoi: float, alpha: float, power: float, hypotheses: Hypotheses
) -> int | None:
    """The fixed design's paired seeds (None: beyond analysis.paired_power.MAX_SEEDS)."""
    sup = seeds_needed(sesoi, sd, alpha, power, one_sided=True)
    eqv = seeds_needed_tost(sesoi, sd, alpha, power)
    if hypotheses == "superiority":
        return sup
    if hypotheses == "equivalence":
        return eqv
    return None if sup is None or eqv is None else max(sup, eqv)


def plan(
    sd: float,
    sesoi: float,
    *,
    looks: int = 3,
    alpha: float = 0.05,
    spending: str = "obrien-fleming",
    power: float = 0.8,
    hypotheses: Hypotheses = "both",
    futility: bool = True,
    seeds_per_look: int | None = None,
) -> Plan:
    """The smallest sequential design of `looks` equally spaced looks with the power, and its
    expected seeds, at a paired-difference sd of `sd` (the metric's units). With
    `seeds_per_look` S, the looks are at S, 2S, … instead (`looks` unused): the smallest
    multiple of S with the power, at most MAX_LOOKS looks."""
    if not sd > 0:
        raise ValueError(f"the sd of the paired differences must be > 0, got {sd}")
    fixed = fixed_seeds(sd, sesoi, alpha, power, hypotheses)
    if fixed is None:
        raise ValueError(f"no fixed design reaches power {power} for SESOI {sesoi} at sd {sd}")
    step = seeds_per_look or 1
    n = max(fixed, looks + 1) if seeds_per_look is None else step * -(-fixed // step)
    while True:
        if seeds_per_look is not None and n > MAX_LOOKS * step:
            raise ValueError(
                f"{step} seeds a look: the power needs more than {MAX_LOOKS} looks "
                f"({MAX_LOOKS * step} seeds; the fixed design needs {fixed}); "
                "give more seeds a look"
            )
        test = sequential_test(
            looks_at(n, looks) if seeds_per_look is None else tuple(range(step, n + 1, step)),
            sesoi=sesoi,
            hypotheses=hypotheses,
            alpha=alpha,
            spending=spending,
            power=power,
            futility=futility,
        )
        found = Plan(test, sd, power, fixed, operating(test, 0.0, sd), operating(test, sesoi, sd))
        if found.power >= power or n >= MAX_FACTOR * fixed + 20:
            return found
        n += step
