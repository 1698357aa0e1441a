"""The saturating form M = E + A·N^−α fitted as the field fits it (Hoffmann et al. 2022,
"Chinchilla", approach 3): E = e^e and A = e^a, the Huber loss (δ = 1e-3) of the log residuals
log(E + A·N^−α) − log M minimised (`scipy.optimize.minimize`) from a grid of starts,
the best optimum kept. Intervals come from a bootstrap over (size, seed) units (bootstrap.py),
not from the curvature at the optimum, whose Wald intervals Besiroglu et al. (2024, Epoch AI's
replication) showed to be far too narrow for this fit.

The Huber loss is quadratic within δ of zero and linear beyond: at δ = 1e-3 and residuals of a
few percent it is close to least absolute deviations, so one outlying size pulls the fit less
than least squares would (saturating.py fits the same form by least squares, with Wald
intervals). The parametrisation keeps E, A > 0 and α ≥ 0 (a bound), so the form always falls
with N (or is flat at α = 0); a metric that rises with N is fitted on |M| only when all its
values share one sign, like every other form here.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from analysis.scaling.powerlaw import NotEnoughData, distinct_count, log_points

HUBER_DELTA = 1e-3
"""Chinchilla's δ, on natural-log residuals."""
MIN_SIZES = 4
"""Three parameters: three sizes are fitted exactly, so the form needs four."""
ALPHA_BOUNDS = (0.0, 5.0)
"""α ≥ 0 keeps the form falling; above 5 it is a step at the smallest size, not a law."""
START_ALPHAS = (0.05, 0.15, 0.5, 1.5)
START_E_FRACTIONS = (1e-3, 0.1, 0.5, 0.9)
"""Starts: E as these fractions of the smallest |M|, α from START_ALPHAS, A then set so that
the form passes through the mean |M| at the mean log N (a grid like Chinchilla's, scaled to the
data instead of fixed numbers, since metrics here range over orders of magnitude).

The minimiser is TNC (scipy's bounded truncated Newton) with the analytic gradient rather than
Chinchilla's L-BFGS: with scipy 1.17 on this machine L-BFGS-B took 0.3–4 s per start against
TNC's 2–50 ms, to the same optimum on the tests' data (tests/analysis/scaling/test_huber.py)."""


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    """Huber's loss per residual: r²/2 within δ, δ·(|r| − δ/2) beyond."""
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def objective(theta: np.ndarray, x: np.ndarray, y: np.ndarray, delta: float) -> float:
    """Σ Huber_δ(log(e^e + e^{a − α·x}) − y) for θ = (e, a, α), x = log N, y = log |M|."""
    r = np.logaddexp(theta[0], theta[1] - theta[2] * x) - y
    return float(np.sum(huber(r, delta)))


def _scaled(theta: np.ndarray, x: np.ndarray, y: np.ndarray, delta: float):
    """Objective / δ and its gradient in θ (dividing by δ keeps L-BFGS-B's tolerances
    meaningful: the loss itself is of order δ·|r|)."""
    lf = np.logaddexp(theta[0], theta[1] - theta[2] * x)  # (n,)
    r = lf - y
    w = np.exp(theta[0] - lf)  # d log f / de; 1 − w = d log f / da
    psi = np.clip(r, -delta, delta) / delta  # (n,)
    grad = np.array([np.sum(psi * w), np.sum(psi * (1 - w)), -np.sum(psi * (1 - w) * x)])
    return float(np.sum(huber(r, delta))) / delta, grad


@dataclass(frozen=True)
class HuberFit:
    """|M| = E + A·N^−α fitted over `n_points` points at `n_sizes` distinct N; E and A carry the
    sign of the data. `loss` is the Huber objective at the optimum; `starts` the grid's size and
    `agree` how many starts ended within 1e-6 (relative) of the best objective (one start
    alone finding it says the surface is rough). `remark` says why a fit is weak."""

    E: float
    A: float
    alpha: float
    loss: float
    n_points: int
    n_sizes: int
    sign: int
    starts: int
    agree: int
    theta: tuple[float, float, float]
    """(e, a, α) at the optimum, with a at N = 1 (refits start here)."""
    remark: str | None = None

    def predict(self, n: np.ndarray) -> np.ndarray:
        """The fitted M at sizes `n`."""
        return self.E + self.A * np.asarray(n, dtype=np.float64) ** -self.alpha


def grid_starts(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """The starting θ = (e, a, α) of the grid (see START_ALPHAS)."""
    m_min, x_mean, m_mean = float(np.exp(y.min())), float(x.mean()), float(np.exp(y).mean())
    out = []
    for frac, alpha in itertools.product(START_E_FRACTIONS, START_ALPHAS):
        e = frac * m_min
        a = np.log(max(m_mean - e, 1e-3 * m_mean)) + alpha * x_mean
        out.append(np.array([np.log(e), a, alpha]))
    return out


def _minimise(start: np.ndarray, x: np.ndarray, y: np.ndarray, delta: float):
    e_hi = float(y.max()) + 1.0  # E above every |M| cannot fit a falling form
    return optimize.minimize(
        _scaled,
        start,
        args=(x, y, delta),
        jac=True,
        method="TNC",
        bounds=[(float(y.min()) - 30.0, e_hi), (None, None), ALPHA_BOUNDS],
        options={"maxfun": 400, "ftol": 1e-12, "xtol": 1e-10, "gtol": 1e-9},
    )


def fit_huber(
    n: np.ndarray,
    m: np.ndarray,
    *,
    delta: float = HUBER_DELTA,
    starts: list[np.ndarray] | None = None,
) -> HuberFit:
    """Fit |M| = E + A·N^−α by the Huber loss on log residuals from every start (default: the
    grid); NotEnoughData with the reason when the points cannot support it."""
    x, y, sign = log_points(n, m)
    n_sizes = distinct_count(np.asarray(n, dtype=np.float64))
    if n_sizes < MIN_SIZES:
        raise NotEnoughData(f"fewer than {MIN_SIZES} sizes ({n_sizes}): no Huber fit")
    tried = starts if starts is not None else grid_starts(x, y)
    results = [_minimise(np.asarray(s, dtype=np.float64), x, y, delta) for s in tried]
    losses = np.array([r.fun * delta for r in results])
    best = results[int(np.argmin(losses))]
    e, a, alpha = (float(v) for v in best.x)
    agree = int(np.sum(losses <= losses.min() * (1 + 1e-6) + 1e-15))
    remark = None
    if alpha <= ALPHA_BOUNDS[0] + 1e-6:
        remark = "α → 0: the points do not fall with N (a constant fits as well)"
    elif alpha >= ALPHA_BOUNDS[1] - 1e-6:
        remark = f"α at its bound {ALPHA_BOUNDS[1]:g}: a step, not a scaling law"
    return HuberFit(
        E=sign * float(np.exp(e)),
        A=sign * float(np.exp(a)),
        alpha=alpha,
        loss=float(losses.min()),
        n_points=int(x.size),
        n_sizes=n_sizes,
        sign=sign,
        starts=len(tried),
        agree=agree,
        theta=(e, a, alpha),
        remark=remark,
    )


@dataclass(frozen=True)
class JointFit:
    """L(N, D) = E + A·N^−α + B·D^−β (Chinchilla's joint form) by the same Huber loss on log
    residuals, over `n_points` (N, D) points; `agree` as in HuberFit."""

    E: float
    A: float
    alpha: float
    B: float
    beta: float
    loss: float
    n_points: int
    starts: int
    agree: int
    theta: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    """(e, a, α, b, β) at the optimum, a and b at N = D = 1 (refits start here)."""
    converged: bool = True
    """Whether the minimiser reported success from the best start (a bootstrap counts the
    resamples where it did not)."""

    def predict(self, n: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The fitted L at (N, D)."""
        n, d = np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64)
        return self.E + self.A * n**-self.alpha + self.B * d**-self.beta


def _joint_scaled(theta: np.ndarray, xn: np.ndarray, xd: np.ndarray, y: np.ndarray, delta: float):
    """Objective / δ and gradient for θ = (e, a, α, b, β), log f = LSE(e, a − α·xn, b − β·xd).
    The three-term log-sum-exp is written out (shifted by its largest term) rather than
    np.logaddexp.reduce over a stacked array: 1.8× faster per call, which a 1,000-resample
    bootstrap of ~300 calls a refit feels."""
    t1 = theta[1] - theta[2] * xn  # (n,)
    t2 = theta[3] - theta[4] * xd  # (n,)
    top = np.maximum(np.maximum(t1, t2), theta[0])
    w0, w1, w2 = np.exp(theta[0] - top), np.exp(t1 - top), np.exp(t2 - top)
    total = w0 + w1 + w2
    r = top + np.log(total) - y
    psi = np.clip(r, -delta, delta) / delta / total  # d loss/δ / d log f, over each share's sum
    grad = np.array([psi @ w0, psi @ w1, -(psi * w1) @ xn, psi @ w2, -(psi * w2) @ xd])
    return float(np.sum(huber(r, delta))) / delta, grad


def joint_starts(xn: np.ndarray, xd: np.ndarray, m: np.ndarray) -> list[np.ndarray]:
    """The 18 starting θ = (e, a, α, b, β) of the joint fit's grid: E a fraction of the smallest
    M, each power term half of the mean M at the mean log N and log D."""
    m_min, m_mean = float(m.min()), float(m.mean())
    out = []
    for frac, alpha, beta in itertools.product((0.1, 0.5), (0.1, 0.3, 0.9), (0.1, 0.3, 0.9)):
        half = max(m_mean - frac * m_min, 1e-3 * m_mean) / 2
        out.append(
            np.array(
                [
                    np.log(frac * m_min),
                    np.log(half) + alpha * xn.mean(),
                    alpha,
                    np.log(half) + beta * xd.mean(),
                    beta,
                ]
            )
        )
    return out


def fit_joint(
    n: np.ndarray,
    d: np.ndarray,
    m: np.ndarray,
    *,
    delta: float = HUBER_DELTA,
    starts: list[np.ndarray] | None = None,
) -> JointFit:
    """Fit L(N, D) = E + A·N^−α + B·D^−β to positive M by the Huber loss on log residuals from
    every start (default: the grid, joint_starts); NotEnoughData below three distinct N and
    three distinct D or six points."""
    n, d, m = (np.asarray(v, dtype=np.float64) for v in (n, d, m))
    order = np.lexsort((m, d, n))  # canonical order: the fit does not depend on the input's
    n, d, m = n[order], d[order], m[order]
    if distinct_count(n) < 3 or distinct_count(d) < 3:
        raise NotEnoughData("a joint fit needs three distinct N and three distinct D")
    if not np.all(m > 0) or m.size < 6:
        raise NotEnoughData("a joint fit needs six or more positive values")
    xn, xd, y = np.log(n), np.log(d), np.log(m)
    bounds = [(y.min() - 30, y.max() + 1), (None, None), ALPHA_BOUNDS, (None, None), ALPHA_BOUNDS]
    tried = starts if starts is not None else joint_starts(xn, xd, m)
    results = [
        optimize.minimize(
            _joint_scaled,
            np.asarray(start, dtype=np.float64),
            args=(xn, xd, y, delta),
            jac=True,
            method="TNC",
            bounds=bounds,
            options={"maxfun": 800, "ftol": 1e-12, "xtol": 1e-10, "gtol": 1e-9},
        )
        for start in tried
    ]
    losses = np.array([r.fun * delta for r in results])
    best = results[int(np.argmin(losses))]
    e, a, alpha, b, beta = (float(v) for v in best.x)
    return JointFit(
        E=float(np.exp(e)),
        A=float(np.exp(a)),
        alpha=alpha,
        B=float(np.exp(b)),
        beta=beta,
        loss=float(losses.min()),
        n_points=int(m.size),
        starts=len(results),
        agree=int(np.sum(losses <= losses.min() * (1 + 1e-6) + 1e-15)),
        theta=(e, a, alpha, b, beta),
        converged=bool(best.success),
    )
