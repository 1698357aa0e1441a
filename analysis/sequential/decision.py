"""What a look decides, from the paired differences seen so far, and the interval it reports.

Every decision is read off the look's repeated confidence interval (Jennison and Turnbull 1989):
d̄ ± t_k·s/√n, t_k the look's efficacy bound on the t scale. Its level is 1 − 2α jointly over all
looks whatever the stopping rule (so also when a study stops early, is stopped for budget, or
ignores its non-binding futility rule), and reading the decisions off it is the same as the
sequential tests (docs/sequential.md):

- `superior`: the interval lies above 0 (the one-sided test of "better" crosses its bound);
- `inferior`: it lies below 0 (the mirror test);
- `equivalent`: it lies inside (−SESOI, +SESOI) (both one-sided tests of TOST cross);
- `futile`: at a look before the last, the futility rule fires and nothing else did: for
  superiority, T < the look's futility bound (the design's power assumption says the SESOI is not
  there); for equivalence, either TOST statistic (d̄ ± SESOI)/se below it; with both hypotheses,
  both rules;
- `undecided`: none of these; the study goes on, or at its last look ends undecided (neither
  claim shown: the registered studies' "inconclusive").

Differences are oriented: positive is better for the treatment (analysis/sequential/replay.py
turns a lower-is-better metric around). With several treatments the superiority and inferiority
tests may be judged at Holm-adjusted levels: their bounds come from their own `SequentialTest`s
(the same looks at the lower level).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from analysis.seed_stats import EQUAL_RTOL
from analysis.sequential.design import SequentialTest

Decision = Literal["superior", "inferior", "equivalent", "futile", "undecided"]
DECISIONS: tuple[Decision, ...] = ("superior", "inferior", "equivalent", "futile", "undecided")
UNDECIDED, SUPERIOR, INFERIOR, EQUIVALENT, FUTILE = 4, 0, 1, 2, 3
"""Each decision's index in DECISIONS (the codes `classify` returns)."""


@dataclass(frozen=True)
class LookBounds:
    """One look's bounds on the t scale."""

    superiority: float
    """Efficacy bound of the superiority test (treatment better)."""
    inferiority: float
    """Efficacy bound of its mirror (treatment worse)."""
    equivalence: float
    """Efficacy bound of each TOST test; the repeated interval's half-width in standard errors."""
    superiority_futility: float | None
    equivalence_futility: float | None
    last: bool


def bounds_at(
    test: SequentialTest,
    look: int,
    superiority: SequentialTest | None = None,
    inferiority: SequentialTest | None = None,
) -> LookBounds:
    """The bounds of look `look` (0-based) of `test`; the superiority and inferiority tests'
    from their own tests (the same looks at another level: Holm) when given."""
    sup, inf = superiority or test, inferiority or test
    for other in (sup, inf):
        if other.seeds != test.seeds:
            raise ValueError(f"a test looks at {other.seeds}, the study at {test.seeds}")
    return LookBounds(
        sup.efficacy_t[look],
        inf.efficacy_t[look],
        test.efficacy_t[look],
        None if sup.futility_t is None else sup.futility_t[look],
        None if test.futility_t is None else test.futility_t[look],
        look == test.looks - 1,
    )


def classify(
    mean: np.ndarray, se: np.ndarray, bounds: LookBounds, test: SequentialTest
) -> tuple[np.ndarray, np.ndarray]:
    """Per study (arrays of the look's mean difference and its standard error): the decision's
    index in DECISIONS, and whether the equivalence interval holds (also when a superiority or
    inferiority decision takes precedence: "better, by less than the SESOI")."""
    margin, kind = test.sesoi, test.hypotheses
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = mean / se
        lower_t, upper_t = (mean + margin) / se, (margin - mean) / se
    sup = kind in ("superiority", "both")
    eqv = kind in ("equivalence", "both")
    superior = sup & (t0 >= bounds.superiority)
    inferior = sup & (-t0 >= bounds.inferiority)
    equivalent = eqv & (lower_t >= bounds.equivalence) & (upper_t >= bounds.equivalence)
    futile_sup = _below(t0, bounds.superiority_futility)
    futile_eq = _below(np.minimum(lower_t, upper_t), bounds.equivalence_futility)
    futile = {"superiority": futile_sup, "equivalence": futile_eq, "both": futile_sup & futile_eq}
    codes = np.full(np.shape(mean), UNDECIDED)
    if not bounds.last:  # the last look's non-decision is "undecided", not a futility stop
        codes = np.where(futile[kind], FUTILE, codes)
    codes = np.where(equivalent, EQUIVALENT, codes)
    codes = np.where(inferior, INFERIOR, codes)
    codes = np.where(superior, SUPERIOR, codes)
    return codes, equivalent


def _below(statistic: np.ndarray, bound: float | None) -> np.ndarray:
    if bound is None:
        return np.zeros(np.shape(statistic), dtype=bool)
    return statistic < bound


@dataclass(frozen=True)
class LookResult:
    """One look of one treatment against the reference, on oriented differences."""

    look: int
    """1-based."""
    seeds: int
    mean: float
    """Mean paired difference (the estimate at this look)."""
    sd: float
    t: float
    """mean / (sd/√seeds): the superiority statistic."""
    ci: tuple[float, float]
    """The repeated confidence interval at level 1 − 2α."""
    bound: float
    """The superiority tests' efficacy bound at this look (t scale)."""
    futility_bound: float | None
    decision: Decision
    equivalent: bool
    """The equivalence interval holds (also under a superiority or inferiority decision)."""
    stop: bool
    """The arm stops here: decided, or at its last look."""
    reason: str | None = None


def evaluate_look(
    test: SequentialTest,
    look: int,
    diffs: Sequence[float],
    superiority: SequentialTest | None = None,
    inferiority: SequentialTest | None = None,
) -> LookResult:
    """Look `look` (1-based) of `test` on the oriented paired differences of its seeds (their
    number must be the look's); the superiority and inferiority tests at the levels of
    `superiority` and `inferiority` when given (Holm), else at `test`'s."""
    if not 1 <= look <= test.looks:
        raise ValueError(f"look {look} of a design with {test.looks}")
    d = np.asarray(diffs, dtype=np.float64)
    n = test.seeds[look - 1]
    if d.size != n:
        raise ValueError(f"look {look} judges {n} paired seeds, got {d.size}")
    bounds = bounds_at(test, look - 1, superiority, inferiority)
    mean, sd = math.fsum(d.tolist()) / n, float(np.std(d, ddof=1))
    if sd <= EQUAL_RTOL * max(float(np.max(np.abs(d))), 1e-300):
        return LookResult(
            look,
            n,
            mean,
            0.0,
            math.nan,
            (mean, mean),
            bounds.superiority,
            bounds.superiority_futility,
            "undecided",
            False,
            bounds.last,
            "all differences equal: no test",
        )
    se = sd / math.sqrt(n)
    codes, equivalent = classify(np.array([mean]), np.array([se]), bounds, test)
    decision = DECISIONS[int(codes[0])]
    half = bounds.equivalence * se
    return LookResult(
        look,
        n,
        mean,
        sd,
        mean / se,
        (mean - half, mean + half),
        bounds.superiority,
        bounds.superiority_futility,
        decision,
        bool(equivalent[0]),
        decision != "undecided" or bounds.last,
    )
