"""Fitting a form (forms.JointForm) by the Huber loss of the log residuals
r = log(e^e + e^(a − α·log N) + e^(b − β·log D)) − log M, the field's objective (Hoffmann et al.
2022, approach 3).

The minimiser is scipy.optimize.least_squares: trust-region reflective (bounds), the analytic
Jacobian, and loss="huber" with f_scale = δ, which minimises exactly Σ Huber_δ(r) (½·r² within
δ of zero, δ·(|r| − δ/2) beyond); row weights (--weights) enter as a weighted ρ. It reaches the
optimum TNC did in a fifth of the time on the tests' 240-point table (bench/joint_fit.py), and
L-BFGS-B, which stalls on the Huber loss's flat second derivative, in a hundredth.

A full fit evaluates the objective at a grid of starts for every start at once (one numpy pass
over (starts, points)) and refines the best few; a bootstrap resample starts from the full fit's
optimum. A fit the evaluation limit stops is continued, then refitted from the grid, and only
then counts as not converged (`Solved.converged`), never silently as a fit.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from analysis.scaling.batch_fit import solve_batch
from analysis.scaling.forms import JointForm
from analysis.scaling.log_residuals import huber_value, residuals_jacobian

START_E_FRACTIONS = (1e-3, 0.1, 0.3, 0.5, 0.7, 0.9)
"""Starts: E as these fractions of the smallest value."""
START_EXPONENTS = (0.05, 0.1, 0.2, 0.35, 0.5, 0.8, 1.5)
"""Starts: α (and β) from these; A (and B) then set so that the form passes through the mean
value at the mean log N (and log D), each power term carrying an equal share."""
REFINE = 8
"""Starts of the grid refined by least squares in a full fit (the best by objective)."""
MAX_NFEV = 300
"""Evaluations a refit may use before it is continued (then MAX_NFEV_MORE more)."""
MAX_NFEV_MORE = 1000
AGREE_RTOL = 1e-6
"""Starts whose optimum is within this of the best objective (relative) count as agreeing."""


def _weighted_huber(w: np.ndarray):
    """least_squares' ρ(z) (z = r²/δ²) of the Huber loss times row weights `w`."""

    def rho(z: np.ndarray) -> np.ndarray:
        small = z <= 1.0
        root = np.sqrt(np.where(small, 1.0, z))
        out = np.empty((3, z.size))
        out[0] = np.where(small, z, 2.0 * root - 1.0)
        out[1] = np.where(small, 1.0, 1.0 / root)
        out[2] = np.where(small, 0.0, -0.5 / (root * root * root))
        return out * w

    return rho


@dataclass(frozen=True)
class Solved:
    """One minimisation's end: θ (5,), the Huber objective there, whether least squares met a
    tolerance (not the evaluation limit), and the evaluations used."""

    theta: np.ndarray
    loss: float
    converged: bool
    nfev: int


@dataclass(frozen=True)
class Points:
    """One problem's data on the log scale: log N, log D (zeros without a D axis), log M, and
    row weights (None: all 1)."""

    xn: np.ndarray
    xd: np.ndarray
    y: np.ndarray
    w: np.ndarray | None = None

    @staticmethod
    def of(n, d, m, w=None) -> Points:
        n = np.asarray(n, dtype=np.float64)
        d = np.ones_like(n) if d is None else np.asarray(d, dtype=np.float64)
        m = np.asarray(m, dtype=np.float64)
        return Points(np.log(n), np.log(d), np.log(m), None if w is None else np.asarray(w, float))


def solve(form: JointForm, pts: Points, start: np.ndarray, max_nfev: int = MAX_NFEV) -> Solved:
    """Least squares from θ `start` (5,): the free values refined, the others held."""
    lo, hi = form.bounds(pts.y)
    x0 = np.clip(form.reduce(np.asarray(start, dtype=np.float64))[0], lo, hi)
    xn, xd, y = pts.xn[None, :], pts.xd[None, :], pts.y[None, :]
    last: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def both(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # least_squares asks for the Jacobian at the point whose residuals it just took: one
        # evaluation serves both (a third of a fit's time went to computing them twice).
        key = x.tobytes()
        if key not in last:
            last.clear()
            last[key] = residuals_jacobian(form.theta(x), xn, xd, y)
        return last[key]

    def fun(x: np.ndarray) -> np.ndarray:
        return both(x)[0][0]

    def jac(x: np.ndarray) -> np.ndarray:
        return form.reduce_jacobian(both(x)[1][0])

    res = optimize.least_squares(
        fun,
        x0,
        jac=jac,
        bounds=(lo, hi),
        method="trf",
        loss="huber" if pts.w is None else _weighted_huber(pts.w),
        f_scale=form.delta,
        x_scale="jac",
        ftol=1e-12,
        xtol=1e-12,
        gtol=1e-12,
        max_nfev=max_nfev,
    )
    theta = form.theta(res.x)[0]
    loss = float(huber_value(res.fun, form.delta, pts.w))
    return Solved(theta, loss, bool(res.status > 0), int(res.nfev))


def grid_starts(form: JointForm, pts: Points) -> np.ndarray:
    """The grid of starting θ (S, 5) (START_E_FRACTIONS × START_EXPONENTS, and × β for the
    joint form unless tied), fixed parameters at their values."""
    m = np.exp(pts.y)
    m_min, m_mean = float(m.min()), float(m.mean())
    xn_bar, xd_bar = float(pts.xn.mean()), float(pts.xd.mean())
    held = form.values
    fracs = START_E_FRACTIONS if "E" not in held else (held["E"] / m_min,)
    alphas = START_EXPONENTS if "alpha" not in held else (held["alpha"],)
    betas = (
        (1.0,)
        if form.n_only
        else (held["beta"],)
        if "beta" in held
        else (None,)
        if form.tie
        else START_EXPONENTS
    )
    terms = 1 if form.n_only else 2
    rows = []
    for frac, alpha, beta in itertools.product(fracs, alphas, betas):
        beta = alpha if beta is None else beta
        e = np.log(frac * m_min)
        share = max(m_mean - frac * m_min, 1e-3 * m_mean) / terms
        a = np.log(held["A"]) if "A" in held else np.log(share) + alpha * xn_bar
        if form.n_only:
            b = -np.inf
        else:
            b = np.log(held["B"]) if "B" in held else np.log(share) + beta * xd_bar
        rows.append((e, a, alpha, b, beta))
    return form.theta(form.reduce(np.array(rows)))


def fit_grid(form: JointForm, pts: Points, refine: int = REFINE) -> tuple[Solved, int, int]:
    """The full fit: the grid's objective at once, the best `refine` starts refined, the best
    optimum kept. Returns (best, starts refined, starts agreeing with the best)."""
    starts = grid_starts(form, pts)
    r, _ = residuals_jacobian(starts, pts.xn[None, :], pts.xd[None, :], pts.y[None, :])
    values = huber_value(r, form.delta, pts.w)
    order = np.argsort(np.where(np.isfinite(values), values, np.inf))[:refine]
    solved = _refine(form, pts, starts[order])
    losses = np.array([s.loss for s in solved])
    best = solved[int(np.argmin(losses))]
    agree = int(np.sum(losses <= best.loss * (1 + AGREE_RTOL) + 1e-15))
    if not best.converged:
        best = _continued(form, pts, best)
    return best, len(solved), agree


def _refine(form: JointForm, pts: Points, starts: np.ndarray) -> list[Solved]:
    """The starts (S, 5) refined together (batch_fit.solve_batch), the best of them then polished
    by least squares (whose end and convergence the full fit reports); a start the batch does
    not finish is refined alone by least squares, as before the batch."""
    k = starts.shape[0]
    rows = [np.broadcast_to(v[None, :], (k, v.size)) for v in (pts.xn, pts.xd, pts.y)]
    w = None if pts.w is None else np.broadcast_to(pts.w[None, :], (k, pts.w.size))
    batch = solve_batch(form, *rows, w, starts)
    out = [
        Solved(batch.theta[i], float(batch.loss[i]), True, 0)
        if batch.converged[i]
        else solve(form, pts, batch.theta[i])
        for i in range(k)
    ]
    best = int(np.argmin([s.loss for s in out]))
    out[best] = solve(form, pts, out[best].theta)
    return out


def _continued(form: JointForm, pts: Points, stopped: Solved) -> Solved:
    """Least squares resumed from where the evaluation limit stopped it."""
    more = solve(form, pts, stopped.theta, max_nfev=MAX_NFEV_MORE)
    return Solved(more.theta, more.loss, more.converged, stopped.nfev + more.nfev)


def refit(form: JointForm, pts: Points, start: np.ndarray) -> tuple[Solved, str]:
    """A resample's fit from `start` (the full fit's θ): continued when stopped by the limit,
    then refitted from the grid (the better of the two kept). Returns it and how it was
    reached: "warm", "continued", "grid" (the grid's optimum beat the warm start's), or
    "not converged"."""
    first = solve(form, pts, start)
    if first.converged:
        return first, "warm"
    return resume(form, pts, first)


def resume(form: JointForm, pts: Points, stopped: Solved) -> tuple[Solved, str]:
    """A fit stopped short of convergence (by least squares' evaluation limit, or a batch's
    step limit: batch_fit.py) continued, then refitted from the grid, as `refit` says."""
    more = _continued(form, pts, stopped)
    if more.converged:
        return more, "continued"
    grid, _, _ = fit_grid(form, pts, refine=2)  # a fallback: the two best starts of the grid
    if grid.converged and grid.loss <= more.loss * (1 + AGREE_RTOL):
        return grid, "grid"
    return (grid if grid.loss < more.loss else more), "not converged"
