"""Student-t statistics without scipy: the t distribution (through the regularised incomplete beta
function), mean ± confidence interval over seeds, and the paired t-test.

`analysis/` must stay light (polars + numpy), so the few special functions it needs are computed
here from `math.lgamma`; tests check them against scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

_TINY = 1e-300
_EPS = 1e-15
_MAX_TERMS = 10_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated with the modified Lentz method.

    Converges quickly for x < (a + 1) / (a + b + 2); callers use the symmetry
    I_x(a, b) = 1 − I_{1−x}(b, a) otherwise.
    """
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    f = d
    for m in range(1, _MAX_TERMS):
        # Two terms per m: the even coefficient m(b−m)x / ((a+2m−1)(a+2m)) ...
        coef = m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m))
        d = 1.0 + coef * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + coef / c
        c = c if abs(c) > _TINY else _TINY
        f *= d * c
        # ... and the odd one −(a+m)(a+b+m)x / ((a+2m)(a+2m+1)).
        coef = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0))
        d = 1.0 + coef * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + coef / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        f *= step
        if abs(step - 1.0) < _EPS:
            return f
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) for a, b > 0 and 0 ≤ x ≤ 1."""
    return _betainc(a, b, x, 1.0 - x)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) with y = 1 − x passed in by a caller that knows it more precisely than 1 − x."""
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a > 0 and b > 0, got a={a}, b={b}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got x={x}")
    if x == 0.0 or y == 0.0:
        return 0.0 if x == 0.0 else 1.0
    log_front = (
        a * math.log(x) + b * math.log(y) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (df > 0, need not be an integer)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    # P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2); half of it lies on each side.
    # Both x and 1 − x are formed directly: for tiny t, 1 − df/(df+t²) would round to 0.
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with `df` degrees of freedom."""
    return 1.0 - t_sf(t, df)


@lru_cache(maxsize=512)
def t_quantile(p: float, df: float) -> float:
    """The t such that P(T ≤ t) = p (the inverse of `t_cdf`), found by bisection on `t_sf`."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile level must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    upper_tail = 1.0 - p
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > upper_tail:
        lo, hi = hi, hi * 2.0
    # 200 halvings take any bracket below 1e6 to well under one ulp of the answer.
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_sf(mid, df) > upper_tail:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return 0.5 * (lo + hi)


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
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    n = len(values)
    if n == 0:
        raise ValueError("mean_ci needs at least one value")
    mean = math.fsum(values) / n
    if n < 2:
        return MeanCI(mean=mean, half_width=None, n=1, sd=None, level=level)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile((1.0 + level) / 2.0, n - 1) * sd / math.sqrt(n)
    return MeanCI(mean=mean, half_width=half, n=n, sd=sd, level=level)


@dataclass(frozen=True)
class PairedTest:
    """Two-sided paired t-test of x against y on the same seeds.

    `t` and `p` are None when they are undefined (fewer than 2 pairs, or all differences equal);
    `reason` then says why.
    """

    n: int
    mean_diff: float | None
    t: float | None
    p: float | None
    reason: str | None = None


def paired_t_test(x: Sequence[float], y: Sequence[float]) -> PairedTest:
    """Paired t-test of H0: mean(x − y) = 0, two-sided (what `scipy.stats.ttest_rel` computes)."""
    if len(x) != len(y):
        raise ValueError(f"paired test needs equal lengths, got {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        return PairedTest(n, None, None, None, reason=f"{n} common seed(s): no test")
    diffs = [a - b for a, b in zip(x, y, strict=True)]
    mean = math.fsum(diffs) / n
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    if var == 0.0:
        return PairedTest(n, mean, None, None, reason="all differences equal: no test")
    t = mean / math.sqrt(var / n)
    return PairedTest(n, mean, t, 2.0 * t_sf(abs(t), n - 1))
