"""The saturating form M = E + A·N^−α and the joint form L(N, D) = E + A·N^−α + B·D^−β fitted as
the field fits them (Hoffmann et al. 2022, "Chinchilla", approach 3): E = e^e, A = e^a,
B = e^b, the Huber loss (δ = 1e-3) of the log residuals minimised from a grid of starts, the
best optimum kept (robust_fit.py: scipy's least squares with loss="huber"). Intervals come from
a bootstrap (joint.py, robust.py), not from the curvature at the optimum, whose Wald intervals
Besiroglu et al. (2024, Epoch AI's replication) showed to be far too narrow for this fit.

The Huber loss is quadratic within δ of zero and linear beyond: at δ = 1e-3 and residuals of a
few percent it is close to least absolute deviations, so one outlying size pulls the fit less
than least squares would (saturating.py fits the same form by least squares, with Wald
intervals). The parametrisation keeps E, A, B > 0 and α, β ∈ [0, 5], so the form always falls
with N (or is flat at α = 0); a metric that rises with N is fitted on |M| only when all its
values share one sign, like every other form here. Which parameters are free (α = β tied, some
held fixed, δ) is a form (forms.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.scaling.forms import EXPONENT_BOUNDS, HUBER_DELTA, JointForm
from analysis.scaling.powerlaw import NotEnoughData, distinct_count, log_points
from analysis.scaling.robust_fit import (
    Points,
    fit_grid,
    huber_value,
    residuals_jacobian,
    solve,
)

MIN_SIZES = 4
"""Three parameters: three sizes are fitted exactly, so the form needs four (one fewer per
parameter held fixed)."""
ALPHA_BOUNDS = EXPONENT_BOUNDS


def objective(theta: np.ndarray, x: np.ndarray, y: np.ndarray, delta: float) -> float:
    """Σ Huber_δ(log(e^e + e^{a − α·x}) − y) for θ = (e, a, α), x = log N, y = log |M|."""
    full = np.array([[theta[0], theta[1], theta[2], -np.inf, 1.0]])
    r, _ = residuals_jacobian(full, x[None, :], np.zeros_like(x)[None, :], y[None, :])
    return float(huber_value(r, delta)[0])


@dataclass(frozen=True)
class HuberFit:
    """|M| = E + A·N^−α fitted over `n_points` points at `n_sizes` distinct N; E and A carry the
    sign of the data. `loss` is the Huber objective at the optimum; `starts` the starts refined
    and `agree` how many ended within 1e-6 (relative) of the best objective (one start alone
    finding it says the surface is rough). `remark` says why a fit is weak."""

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
    converged: bool = True

    def predict(self, n: np.ndarray) -> np.ndarray:
        """The fitted M at sizes `n`."""
        return self.E + self.A * np.asarray(n, dtype=np.float64) ** -self.alpha


def _min_sizes(form: JointForm) -> int:
    return len(form.free) + 1


def fit_huber(
    n: np.ndarray,
    m: np.ndarray,
    *,
    delta: float = HUBER_DELTA,
    starts: list[np.ndarray] | None = None,
    form: JointForm | None = None,
) -> HuberFit:
    """Fit |M| = E + A·N^−α by the Huber loss on log residuals from the grid (or from each of
    `starts`, θ = (e, a, α)); NotEnoughData with the reason when the points cannot support it."""
    form = form or JointForm(delta=delta, n_only=True)
    x, y, sign = log_points(n, m)
    n_sizes = distinct_count(np.asarray(n, dtype=np.float64))
    if n_sizes < _min_sizes(form):
        raise NotEnoughData(f"fewer than {_min_sizes(form)} sizes ({n_sizes}): no Huber fit")
    pts = Points(x, np.zeros_like(x), y)
    if starts is None:
        best, tried, agree = fit_grid(form, pts)
    else:
        solved = [solve(form, pts, np.r_[np.asarray(s)[:3], -np.inf, 1.0]) for s in starts]
        best = min(solved, key=lambda s: s.loss)
        tried, agree = len(solved), sum(s.loss <= best.loss * (1 + 1e-6) + 1e-15 for s in solved)
    e, a, alpha = (float(v) for v in best.theta[:3])
    remark = None
    if alpha <= ALPHA_BOUNDS[0] + 1e-6:
        remark = "α → 0: the points do not fall with N (a constant fits as well)"
    elif alpha >= ALPHA_BOUNDS[1] - 1e-6:
        remark = f"α at its bound {ALPHA_BOUNDS[1]:g}: a step, not a scaling law"
    return HuberFit(
        E=sign * float(np.exp(e)),
        A=sign * float(np.exp(a)),
        alpha=alpha,
        loss=best.loss,
        n_points=int(x.size),
        n_sizes=n_sizes,
        sign=sign,
        starts=tried,
        agree=int(agree),
        theta=(e, a, alpha),
        remark=remark,
        converged=best.converged,
    )


@dataclass(frozen=True)
class JointFit:
    """L(N, D) = E + A·N^−α + B·D^−β (Chinchilla's joint form) by the same Huber loss on log
    residuals, over `n_points` (N, D) points; `agree` as in HuberFit. A form in N alone has
    B = 0."""

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
    """Whether least squares met its tolerance (continued past the evaluation limit where it
    had to); a bootstrap counts the resamples where it did not."""

    def predict(self, n: np.ndarray, d: np.ndarray) -> np.ndarray:
        """The fitted L at (N, D)."""
        n, d = np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64)
        return self.E + self.A * n**-self.alpha + self.B * d**-self.beta

    @property
    def params(self) -> np.ndarray:
        """(E, A, α, B, β) as a row (1, 5)."""
        return np.array([[self.E, self.A, self.alpha, self.B, self.beta]])


def check_points(form: JointForm, n: np.ndarray, d: np.ndarray, m: np.ndarray) -> None:
    """NotEnoughData when the points cannot support the form: three distinct N (and D), more
    points than free parameters, positive values."""
    if not np.all(m > 0):
        raise NotEnoughData("a fit on log M needs positive values")
    if distinct_count(n) < 3 or (not form.n_only and distinct_count(d) < 3):
        axes = "N" if form.n_only else "N and three distinct D"
        raise NotEnoughData(f"a joint fit needs three distinct {axes}")
    if m.size < len(form.free) + 1:
        raise NotEnoughData(f"a fit of {len(form.free)} parameters needs more points ({m.size})")


def joint_from(form: JointForm, solved, n_points: int, starts: int, agree: int) -> JointFit:
    """A JointFit of a least-squares end (robust_fit.Solved)."""
    e, a, alpha, b, beta = (float(v) for v in solved.theta)
    return JointFit(
        E=float(np.exp(e)),
        A=float(np.exp(a)),
        alpha=alpha,
        B=float(np.exp(b)) if np.isfinite(b) else 0.0,
        beta=beta,
        loss=solved.loss,
        n_points=n_points,
        starts=starts,
        agree=agree,
        theta=(e, a, alpha, b, beta),
        converged=solved.converged,
    )


def fit_joint(
    n: np.ndarray,
    d: np.ndarray,
    m: np.ndarray,
    *,
    delta: float = HUBER_DELTA,
    starts: list[np.ndarray] | None = None,
    form: JointForm | None = None,
    weights: np.ndarray | None = None,
) -> JointFit:
    """Fit L(N, D) = E + A·N^−α + B·D^−β (or the given form) to positive M by the Huber loss on
    log residuals from the grid (or from each of `starts`); NotEnoughData below three distinct
    N and three distinct D or too few points."""
    form = form or JointForm(delta=delta)
    n, d, m = (np.asarray(v, dtype=np.float64) for v in (n, d, m))
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    order = np.lexsort((m, d, n))  # canonical order: the fit does not depend on the input's
    n, d, m = n[order], d[order], m[order]
    w = None if w is None else w[order]
    check_points(form, n, d, m)
    pts = Points.of(n, d, m, w)
    if starts is None:
        best, tried, agree = fit_grid(form, pts)
    else:
        solved = [solve(form, pts, np.asarray(s, dtype=np.float64)) for s in starts]
        best = min(solved, key=lambda s: s.loss)
        tried = len(solved)
        agree = sum(s.loss <= best.loss * (1 + 1e-6) + 1e-15 for s in solved)
    return joint_from(form, best, int(m.size), tried, int(agree))
