"""Many fits of one form at once: the bootstrap's resamples (joint.py, robust.py) and a full fit's
starts (robust_fit.fit_grid) solved together, one numpy pass over (problems, points) per step.

The same objective as robust_fit.solve — Σ w·Huber_δ(r) of the log residuals, the same bounds —
minimised by a bounded Levenberg–Marquardt iteration per problem, every problem with its own
damping: the step solves (H + λ·D) p = −g with g = Jᵀ·w·ψ(r) and H = Jᵀ·w·1[|r| ≤ δ]·J, the
Gauss–Newton curvature of the Huber loss (zero beyond δ, where the loss is linear: what
least_squares' loss="huber" uses too), D the running largest squared column norms of J (as
least_squares' x_scale="jac"). A step is projected onto the bounds; a parameter held at a bound
by its gradient is left out of the step. A problem is done when a step changes its objective by
less than FTOL of it or moves it by less than XTOL of its size.

Scipy has no batched least squares: one `least_squares` call per resample costs ~1 ms of Python
per call before any arithmetic, ~20–50 ms per refit of a 5-point line, and a table's command
runs tens of thousands of them. A problem this iteration does not finish within MAX_ITER steps
is handed back unconverged, and the callers refit it one by one by `least_squares` as before
(robust_fit.refit), so no resample is dropped or changed for the batch's sake.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.scaling.forms import EXPONENT_BOUNDS, JointForm
from analysis.scaling.log_residuals import huber_value, residuals_jacobian

MAX_ITER = 1000
"""Steps before an unfinished problem is handed back to least_squares."""
FTOL = 1e-12
XTOL = 1e-10


@dataclass(frozen=True)
class BatchSolved:
    """The ends of K problems: θ (K, 5), the objective (K,), which converged (K,)."""

    theta: np.ndarray
    loss: np.ndarray
    converged: np.ndarray


def batch_bounds(form: JointForm, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """form.bounds for each row of log values `y` (K, P): lower and upper (K, f)."""
    k = y.shape[0]
    low_x, high_x = EXPONENT_BOUNDS
    lo = np.tile([0.0, -np.inf, low_x, -np.inf, low_x], (k, 1))
    hi = np.tile([0.0, np.inf, high_x, np.inf, high_x], (k, 1))
    lo[:, 0] = np.min(y, axis=1) - 30.0
    hi[:, 0] = np.max(y, axis=1) + 1.0
    return lo[:, form.free], hi[:, form.free]


def _evaluate(form: JointForm, x, xn, xd, y, w, delta):
    """Objective (K,), gradient (K, f), Gauss–Newton curvature (K, f, f), column scales (K, f)."""
    r, jac5 = residuals_jacobian(form.theta(x), xn, xd, y)
    jac = form.reduce_jacobian(jac5)
    inner = np.abs(r) <= delta
    psi = np.where(inner, r, delta * np.sign(r)) * w
    grad = np.einsum("kpf,kp->kf", jac, psi)
    curv = np.einsum("kpf,kp,kpg->kfg", jac, inner * w, jac)
    scale = np.einsum("kpf,kp,kpf->kf", jac, w, jac)
    return huber_value(r, delta, w), grad, curv, scale


def solve_batch(
    form: JointForm,
    xn: np.ndarray,
    xd: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    start: np.ndarray,
    max_iter: int = MAX_ITER,
) -> BatchSolved:
    """K problems: log N, log D, log M and weights (K, P) each (w None: all 1), θ `start` (5,)
    or (K, 5); see the module docstring."""
    k = y.shape[0]
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    lo, hi = batch_bounds(form, y)
    x = np.clip(form.reduce(np.broadcast_to(start, (k, 5))), lo, hi)
    delta = form.delta
    cost, grad, curv, scale = _evaluate(form, x, xn, xd, y, w, delta)
    lam = np.full(k, 1e-3)
    nu = np.full(k, 2.0)
    done = ~np.isfinite(cost)
    conv = np.zeros(k, dtype=bool)
    f = x.shape[1]
    eye = np.eye(f)
    for _ in range(max_iter):
        a = np.flatnonzero(~done)
        if a.size == 0:
            break
        xa, ga, ha = x[a], grad[a], curv[a]
        held = ((xa <= lo[a]) & (ga > 0)) | ((xa >= hi[a]) & (ga < 0))
        keep = ~held
        ga = np.where(keep, ga, 0.0)
        mask = keep[:, :, None] & keep[:, None, :]
        d = np.maximum(scale[a], 1e-300)
        system = np.where(mask, ha, 0.0) + lam[a, None, None] * d[:, :, None] * eye
        system += held[:, :, None] * eye  # a held parameter's row: p = 0
        step = -np.linalg.solve(system, ga[..., None])[..., 0]
        new = np.clip(xa + step, lo[a], hi[a])
        step = new - xa
        predicted = -(np.sum(ga * step, axis=1) + 0.5 * np.einsum("kf,kfg,kg->k", step, ha, step))
        c2, g2, h2, s2 = _evaluate(form, new, xn[a], xd[a], y[a], w[a], delta)
        actual = cost[a] - c2
        ok = np.isfinite(c2) & (actual > 0)
        rho = np.where(predicted > 0, actual / np.where(predicted > 0, predicted, 1.0), 1.0)
        small_f = ok & (actual <= FTOL * cost[a]) & (rho > 0.25)
        small_x = np.linalg.norm(step, axis=1) <= XTOL * (XTOL + np.linalg.norm(xa, axis=1))
        stuck = ~np.any(keep & (ga != 0), axis=1)  # every gradient component held or zero
        acc = a[ok]
        x[acc], cost[acc], grad[acc], curv[acc] = new[ok], c2[ok], g2[ok], h2[ok]
        scale[acc] = np.maximum(scale[acc], s2[ok])
        lam[acc] *= np.maximum(1 / 3, 1 - (2 * np.clip(rho[ok], 0, 1) - 1) ** 3)
        nu[acc] = 2.0
        rej = a[~ok]
        lam[rej] *= nu[rej]
        nu[rej] *= 2.0
        fin = small_f | small_x | stuck
        conv[a[fin]] = True
        done[a[fin]] = True
        done[a[lam[a] > 1e16]] = True  # damping ran off: not converged, handed back
    theta = form.theta(x)
    return BatchSolved(theta, cost, conv & np.isfinite(cost))
