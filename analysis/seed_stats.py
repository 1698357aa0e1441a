"""Statistics over seeds, through scipy.stats: mean ± t-interval, the paired t-test (with a
tolerance for differences that are equal up to float rounding), and the multiple-comparison
corrections the ablation applies to its paired tests (Holm, Benjamini–Hochberg)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import stats

from analysis.option_choices import CORRECTIONS, Correction

EQUAL_RTOL = 1e-12
"""Paired differences whose standard deviation is below EQUAL_RTOL × the largest |value| are
"all equal": a difference of two floats is exact only to about 2.2e-16 of its operands, so a
spread that small is rounding, not seed-to-seed variation, and a t statistic built on it
(t ≈ 1e15) would be meaningless."""


def check_level(level: float) -> float:
    """`level` if it is a confidence level in (0, 1), else ValueError naming it."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    return level


@lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The t such that P(T ≤ t) = p for Student's t with `df` degrees of freedom (cached: a table
    asks for the same few quantiles thousands of times)."""
    return float(stats.t.ppf(p, df))


@dataclass(frozen=True)
class MeanCI:
    """Mean of `n` values with the half width of its t-based confidence interval.

    `half_width` is None when n < 2: one seed gives no interval.
    """

    mean: float
    half_width: float | None
    n: int
    sd: float | None
    level: float

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """Mean ± t_{(1+level)/2, n−1} · sd / √n over `values` (one value per seed)."""
    check_level(level)
    # Plain float arithmetic: tables call this for tens of thousands of cells of 2–5 seeds each,
    # where a numpy array per call costs more than the sum (math.fsum: exactly rounded).
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        raise ValueError("mean_ci needs at least one value")
    mean = math.fsum(vals) / n
    if n < 2:
        return MeanCI(mean=mean, half_width=None, n=1, sd=None, level=level)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - 1))
    half = t_quantile((1.0 + level) / 2.0, n - 1) * sd / math.sqrt(n)
    return MeanCI(mean=mean, half_width=half, n=n, sd=sd, level=level)


@dataclass(frozen=True)
class PairedTest:
    """Two-sided paired t-test of x against y on the same seeds.

    `t` and `p` are None when they are undefined (fewer than 2 pairs, or all differences equal
    up to rounding); `reason` then says why.
    """

    n: int
    mean_diff: float | None
    t: float | None
    p: float | None
    reason: str | None = None


def paired_t_test(x: Sequence[float], y: Sequence[float]) -> PairedTest:
    """Paired t-test of H0: mean(x − y) = 0, two-sided (`scipy.stats.ttest_rel`), or the reason
    there is none."""
    return paired_t_tests([(x, y)])[0]


def paired_t_tests(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], alternative: str = "two-sided"
) -> list[PairedTest]:
    """`paired_t_test` of every (x, y) in `pairs`, in order. scipy's tests are vectorised over an
    axis, so the tests with the same number of pairs go through one `ttest_rel(axis=1)` call (an
    ablation over hundreds of arms makes thousands of tests). `alternative`: scipy's, for
    H1 mean(x − y) > 0 ("greater"), < 0 ("less") or ≠ 0 (default)."""
    out: list[PairedTest | None] = [None] * len(pairs)
    by_n: dict[int, list[int]] = {}
    for i, (x, y) in enumerate(pairs):
        if len(x) != len(y):
            raise ValueError(f"paired test needs equal lengths, got {len(x)} and {len(y)}")
        n = len(x)
        if n < 2:
            out[i] = PairedTest(n, None, None, None, reason=f"{n} common seed(s): no test")
        else:
            by_n.setdefault(n, []).append(i)
    for n, rows in by_n.items():
        xa = np.array([pairs[i][0] for i in rows], dtype=np.float64)  # (k, n)
        ya = np.array([pairs[i][1] for i in rows], dtype=np.float64)  # (k, n)
        diffs = xa - ya
        means = [math.fsum(d) / n for d in diffs.tolist()]
        scale = np.maximum(np.max(np.abs(xa), axis=1), np.max(np.abs(ya), axis=1))  # (k,)
        equal = np.std(diffs, axis=1, ddof=1) <= EQUAL_RTOL * scale  # (k,)
        tested = np.flatnonzero(~equal)
        if tested.size:
            res = stats.ttest_rel(xa[tested], ya[tested], axis=1, alternative=alternative)
            for j, t, p in zip(
                tested, np.atleast_1d(res.statistic), np.atleast_1d(res.pvalue), strict=True
            ):
                out[rows[j]] = PairedTest(n, means[j], float(t), float(p))
        for j in np.flatnonzero(equal):
            out[rows[j]] = PairedTest(
                n, means[j], None, None, reason="all differences equal: no test"
            )
    return out  # type: ignore[return-value]


def adjust_p(pvalues: Sequence[float], method: Correction = "holm") -> list[float]:
    """p-values adjusted for testing them together (one family), in the input order.

    holm: Holm's step-down: sort ascending, p_(i) · (m − i + 1), running maximum, capped at 1
    (controls the family-wise error rate under any dependence; scipy has no Holm, so it is
    these three numpy lines). bh: `scipy.stats.false_discovery_control`. none: unchanged.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size == 0 or method == "none":
        return p.tolist()
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"p-values must be in [0, 1], got {p.tolist()}")
    if method == "bh":
        return np.asarray(stats.false_discovery_control(p, method="bh")).tolist()
    if method != "holm":
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}")
    order = np.argsort(p, kind="stable")
    m = p.size
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = stepped
    return out.tolist()
