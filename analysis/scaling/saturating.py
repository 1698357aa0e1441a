"""The saturating power law M = E + A·N^a (a < 0): a part A·N^a that falls with size and an
irreducible part E it approaches, fitted by nonlinear least squares (`scipy.optimize`), with
Wald t-intervals for E and a (in simulation of the What-Scales case, CE = 1.2·(N/1e6)^−0.12 + 0.8
with 0.3% noise, they cover E and a 93% of the time at 6 sizes and 95% at 8).

The fit minimises the same thing as the plain power law's, the squared error of log |M|, so the
two forms' residuals, R² and AICc are comparable, and the plain form is the saturating one with
E = 0. How it finds the minimum: for a fixed a the model is linear in (E, A), so a grid over a
with (E, A) solved in closed form (on relative errors) gives a starting point, which
`scipy.optimize.least_squares` (MINPACK's Levenberg–Marquardt, a = −e^φ so that a < 0 needs no
bound) then refines in log space with an analytic Jacobian.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from analysis.scaling.powerlaw import NotEnoughData, distinct_count, log_points
from analysis.seed_stats import check_level, t_quantile

MIN_SIZES = 4
"""Three parameters: a fit through three sizes is exact, so the saturating form needs four."""
A_BOUNDS = (-2.0, -1e-4)
"""Exponents outside this range mean the points show no saturation: a → 0 trades E against A
without end (the plain power law or a straight line fits as well), a steeper than N^−2 is a step
that fits the smallest size alone, not a scaling law. The optimiser then runs off without
converging, so such a "fit" is reported as none (NoSaturation), never as numbers."""


class NoSaturation(NotEnoughData):
    """The least-squares optimum lies at a → 0 or a → −∞: the points show no saturation."""


_GRID = -np.geomspace(1e-3, 2.0, 40)  # starting exponents, shallow to steep


@dataclass(frozen=True)
class SaturatingFit:
    """M = sign·(E + A·N^a) fitted over `n_points` points at `n_sizes` distinct N.

    `E` and `A` carry the sign of the data (M = E + A·N^a as written); `E_ci` and `a_ci` are
    Wald t-intervals from the Jacobian at the optimum (n − 3 degrees of freedom), None without a
    residual degree of freedom; `remark` says why. `sse`/`sst` are
    sums of squares of log |M|, as in PowerLawFit.
    """

    E: float
    A: float
    a: float
    E_ci: tuple[float, float] | None
    a_ci: tuple[float, float] | None
    r2: float | None
    n_points: int
    n_sizes: int
    sign: int
    level: float
    sse: float
    sst: float
    remark: str | None

    def predict(self, n: np.ndarray) -> np.ndarray:
        """The fitted M at sizes `n`."""
        return self.E + self.A * np.asarray(n, dtype=np.float64) ** self.a


def _start(x: np.ndarray, mag: np.ndarray, x0: float) -> tuple[float, float, float]:
    """(E, B, a) minimising the relative squared error of E + B·e^{a(x−x0)} over the grid of a,
    each (E, B) in closed form, then refined along a."""

    def solve(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        u = np.exp(a[:, None] * (x[None, :] - x0)) / mag[None, :]  # (G, n): B's column
        w = 1.0 / mag  # (n,): E's column; the target is 1 (relative error)
        # 2×2 normal equations per grid point.
        s_ww = np.sum(w * w)
        s_wu = u @ w  # (G,)
        s_uu = np.sum(u * u, axis=1)  # (G,)
        s_w1 = np.sum(w)
        s_u1 = np.sum(u, axis=1)  # (G,)
        det = s_ww * s_uu - s_wu * s_wu
        with np.errstate(divide="ignore", invalid="ignore"):
            e = (s_uu * s_w1 - s_wu * s_u1) / det
            b = (s_ww * s_u1 - s_wu * s_w1) / det
        resid = e[:, None] * w[None, :] + b[:, None] * u - 1.0  # (G, n)
        sse = np.where(np.isfinite(det) & (det > 0), np.sum(resid * resid, axis=1), np.inf)
        return e, b, sse

    _, _, sse = solve(_GRID)
    i = int(np.argmin(sse))
    lo, hi = _GRID[min(i + 1, _GRID.size - 1)], _GRID[max(i - 1, 0)]
    best = optimize.minimize_scalar(
        lambda a: float(solve(np.array([a]))[2][0]), bounds=(lo, hi), method="bounded"
    )
    a = float(best.x) if best.fun <= sse[i] else float(_GRID[i])
    e1, b1, _ = solve(np.array([a]))
    return float(e1[0]), float(b1[0]), a


@dataclass(frozen=True)
class _LogModel:
    """log f of f = E + B·e^{a(x − x0)} at the points x, its residuals against y = log |M| and
    Jacobians; the optimiser's parameters are θ = (E, B, φ) with a = −e^φ (a < 0, no bound)."""

    x: np.ndarray
    y: np.ndarray
    x0: float

    def value(self, e: float, b: float, a: float) -> tuple[np.ndarray, np.ndarray]:
        """(f, u) at the points, u = e^{a(x − x0)}; (n,) each."""
        with np.errstate(over="ignore", invalid="ignore"):  # a step far off: rejected anyway
            u = np.exp(a * (self.x - self.x0))
            return e + b * u, u

    def resid(self, theta: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            f, _ = self.value(theta[0], theta[1], -np.exp(theta[2]))
        r = np.log(np.maximum(f, 1e-300)) - self.y
        return np.where(np.isfinite(r), r, 1e3)

    def jac_a(self, e: float, b: float, a: float) -> np.ndarray:
        """d log f / d(E, B, a), (n, 3)."""
        f, u = self.value(e, b, a)
        f = np.maximum(f, 1e-300)
        return np.stack([1.0 / f, u / f, b * u * (self.x - self.x0) / f], axis=1)

    def jac(self, theta: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            a = -np.exp(theta[2])
            j = self.jac_a(theta[0], theta[1], a)
            j[:, 2] *= a  # da/dφ = a
        return np.where(np.isfinite(j), j, 0.0)


def _wald(
    lm: _LogModel, e: float, b: float, a: float, sse: float, level: float, sign: int
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Wald t-intervals of E and a from the Jacobian at the optimum (n − 3 df)."""
    dof = lm.x.size - 3
    if dof < 1:
        return None, None
    j = lm.jac_a(e, b, a)  # (n, 3)
    cov = np.linalg.pinv(j.T @ j) * (sse / dof)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    q = t_quantile((1 + level) / 2, dof)
    e_ci = (e - q * se[0], e + q * se[0])
    a_ci = (a - q * se[2], a + q * se[2])
    if sign < 0:
        e_ci = (-e_ci[1], -e_ci[0])
    return e_ci, a_ci


def fit_saturating(
    n: np.ndarray,
    m: np.ndarray,
    *,
    level: float = 0.95,
    start: tuple[float, float, float] | None = None,
) -> SaturatingFit:
    """Fit |M| = E + A·N^a (a < 0) by least squares on log |M|; NotEnoughData with the reason
    when the points cannot support it, NoSaturation when the optimum runs off (see A_BOUNDS).
    `start` = (E, A, a) of a related fit (a leave-one-out refit starts from the full fit) skips
    the grid."""
    check_level(level)
    x, y, sign = log_points(n, m)
    n_sizes = distinct_count(np.asarray(n, dtype=np.float64))
    if n_sizes < MIN_SIZES:
        raise NotEnoughData(f"fewer than {MIN_SIZES} sizes ({n_sizes}): no saturating fit")
    mag = np.exp(y)
    x0 = float(x.mean())  # centring keeps E and B (the coefficient at N = e^x0) well scaled
    if start is None:
        e0, b0, a0 = _start(x, mag, x0)
    else:
        e0, a0 = sign * start[0], start[2]
        b0 = sign * start[1] * np.exp(a0 * x0)
    lm = _LogModel(x, y, x0)
    if not (a0 < 0 and np.all(lm.value(e0, b0, a0)[0] > 0)):
        # A start that predicts a non-positive value has no log: start from the plain power law
        # through the points' ends instead (E = 0).
        slope = (y[-1] - y[0]) / (x[-1] - x[0])
        e0, a0 = 0.0, min(float(slope), -1e-3)
        b0 = float(np.exp(np.mean(y - a0 * (x - x0))))
    fit = optimize.least_squares(
        lm.resid,
        np.array([e0, b0, np.log(-a0)]),
        jac=lm.jac,
        method="lm",
        x_scale="jac",
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
        max_nfev=100,  # a fit that runs off (no saturation) stops here: ~5 ms
    )
    e, b, a = float(fit.x[0]), float(fit.x[1]), float(-np.exp(fit.x[2]))
    r = lm.resid(fit.x)
    sse = float(np.sum(r * r))
    sst = float(np.sum((y - y.mean()) ** 2))
    if not (A_BOUNDS[0] <= a <= A_BOUNDS[1]):
        raise NoSaturation(
            f"no saturation in these points: the fit runs off to a = {a:.2g} "
            f"(outside [{A_BOUNDS[0]:g}, {A_BOUNDS[1]:g}])"
        )
    e_ci, a_ci = _wald(lm, e, b, a, sse, level, sign)
    return SaturatingFit(
        E=sign * e,
        A=sign * b * float(np.exp(-a * x0)),
        a=a,
        E_ci=e_ci,
        a_ci=a_ci,
        r2=None if sst == 0.0 else 1.0 - sse / sst,
        n_points=int(x.size),
        n_sizes=n_sizes,
        sign=sign,
        level=level,
        sse=sse,
        sst=sst,
        remark=None if x.size - 3 >= 1 else "as many parameters as points: no interval",
    )
