"""A form of L(N, D) = E + A·N^−α + B·D^−β (huber.fit_joint, forms.py) with intervals: a
bootstrap over cells (cells.py: cells drawn with replacement, and declared seeds within them),
each resample refitted from the full fit's optimum (the resamples differ little from the data;
the grid would cost eight times as much), all resamples at once (batch_fit.py), percentile
intervals for E, A, α, B, β, and their covariance over the resamples.

No resample is dropped in silence. One the batch does not finish within its step limit is
continued by least squares, then refitted from the grid (robust_fit.resume; counted as
`rescued`); only one that
still does not converge is left out (`not_converged`), as is one whose draw cannot support the
form at all (fewer than three distinct N or D drawn: `degenerate`). Each count is in the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.scaling.batch_fit import solve_batch
from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.cells import Cells
from analysis.scaling.forms import PARAMS, JointForm
from analysis.scaling.huber import JointFit, check_points, fit_joint
from analysis.scaling.powerlaw import NotEnoughData
from analysis.scaling.robust_fit import Points, Solved, resume

__all__ = ["PARAMS", "JointBootstrap", "bootstrap_joint", "predict_with"]


@dataclass(frozen=True)
class JointBootstrap:
    """The full fit and its resamples: `all_draws` (B, 5) of (E, A, α, B, β), NaN where a
    resample was left out; the counts of why; the cells' log residuals about the full fit (P,),
    which a prediction interval adds to the resampled curves; how the cells were drawn."""

    fit: JointFit
    all_draws: np.ndarray
    degenerate: int
    not_converged: int
    rescued: int
    residuals: np.ndarray
    how: str
    form: JointForm
    cells: Cells

    @property
    def resamples(self) -> int:
        return int(self.all_draws.shape[0])

    @property
    def ok(self) -> np.ndarray:
        """Which resamples were fitted (B,)."""
        return np.isfinite(self.all_draws[:, 0])

    @property
    def draws(self) -> np.ndarray:
        """The fitted resamples' parameters (B_ok, 5)."""
        return self.all_draws[self.ok]

    @property
    def failed(self) -> int:
        """Resamples left out of the intervals (degenerate draws and unconverged fits)."""
        return self.degenerate + self.not_converged

    def interval(self, j: int, level: float) -> tuple[float, float] | None:
        """The percentile interval of parameter j (PARAMS order)."""
        return percentile_ci(self.draws[:, j], level) if self.draws.size else None

    def covariance(self) -> np.ndarray | None:
        """The 5×5 covariance of (E, A, α, B, β) over the resamples (None below two)."""
        return np.cov(self.draws, rowvar=False) if self.draws.shape[0] >= 2 else None


def predict_with(params: np.ndarray, n: np.ndarray, d: np.ndarray) -> np.ndarray:
    """L at (n, d) for each row of (E, A, α, B, β) `params` (B, 5): (B, K), for n and d of shape
    (K,) (the same points for every row) or (B, K) (each row its own)."""
    e, a, alpha, b, beta = (params[:, j : j + 1] for j in range(5))
    return e + a * np.asarray(n, dtype=np.float64) ** -alpha + b * np.asarray(d) ** -beta


def bootstrap_joint(
    cells: Cells, *, n_boot: int, seed: int, form: JointForm | None = None
) -> JointBootstrap:
    """Fit the cells' means and refit `n_boot` resamples from the fit's optimum; NotEnoughData
    when the cells cannot support the full fit."""
    form = form or JointForm()
    values = cells.means()
    weights = cells.weights()
    full = fit_joint(cells.n, cells.d, values, form=form, weights=weights)
    idx, drawn = cells.draws(n_boot, seed)
    out = np.full((n_boot, 5), np.nan)
    fine = np.ones(n_boot, dtype=bool)
    for b in range(n_boot):
        try:
            check_points(form, cells.n[idx[b]], cells.d[idx[b]], drawn[b])
        except NotEnoughData:
            fine[b] = False
    degenerate = int(n_boot - fine.sum())
    theta, hows = refit_many(form, cells, idx[fine], drawn[fine], weights, np.array(full.theta))
    not_converged = hows.count("not converged")
    rescued = sum(h not in ("warm", "not converged") for h in hows)
    kept = np.array([h != "not converged" for h in hows], dtype=bool)
    e, a, alpha, bb, beta = theta.T
    b_value = np.where(np.isfinite(bb), np.exp(np.where(np.isfinite(bb), bb, 0.0)), 0.0)
    params = np.column_stack([np.exp(e), np.exp(a), alpha, b_value, beta])
    out[np.flatnonzero(fine)[kept]] = params[kept]
    residuals = np.log(np.abs(values)) - np.log(np.abs(full.predict(cells.n, cells.d)))
    return JointBootstrap(
        fit=full,
        all_draws=out,
        degenerate=degenerate,
        not_converged=not_converged,
        rescued=rescued,
        residuals=residuals,
        how=cells.how(n_boot, seed),
        form=form,
        cells=cells,
    )


def refit_many(
    form: JointForm,
    cells: Cells,
    idx: np.ndarray,
    drawn: np.ndarray,
    weights: np.ndarray | None,
    start: np.ndarray,
) -> tuple[np.ndarray, list[str]]:
    """The resamples (cell indices and drawn values, (K, P) each) refitted from θ `start`
    together (batch_fit.solve_batch); one the batch does not finish is refitted alone by
    least squares from where the batch stopped (robust_fit.resume: continued, then from the
    grid). Returns θ (K, 5) and how each was reached ("warm": by the batch)."""
    theta = np.empty((idx.shape[0], 5))
    hows = ["warm"] * idx.shape[0]
    if idx.shape[0] == 0:
        return theta, hows
    n, d = cells.n[idx], cells.d[idx]
    w = None if weights is None else weights[idx]
    batch = solve_batch(form, np.log(n), np.log(d), np.log(drawn), w, start)
    theta[:] = batch.theta
    for b in np.flatnonzero(~batch.converged):
        pts = Points.of(n[b], d[b], drawn[b], None if w is None else w[b])
        stopped = Solved(batch.theta[b], float(batch.loss[b]), False, 0)
        solved, hows[b] = resume(form, pts, stopped)
        theta[b] = solved.theta
    return theta, hows


def joint_record(boot: JointBootstrap, level: float) -> dict:
    """E, A, α, B, β with their intervals, the fit's loss and starts, the resamples and what
    became of them."""
    f = boot.fit
    record: dict = {}
    for j, (name, v) in enumerate(zip(PARAMS, (f.E, f.A, f.alpha, f.B, f.beta), strict=True)):
        ci = boot.interval(j, level) or (None, None)
        record |= {name: v, f"{name}_ci_low": ci[0], f"{name}_ci_high": ci[1]}
    return record | {
        "huber_loss": f.loss,
        "starts": f.starts,
        "starts_agreeing": f.agree,
        "converged": f.converged,
        "form": boot.form.label(),
        "resampling": boot.how,
        "bootstrap_resamples": boot.resamples - boot.failed,
        "bootstrap_failed": boot.failed,
        "bootstrap_degenerate": boot.degenerate,
        "bootstrap_not_converged": boot.not_converged,
        "bootstrap_rescued": boot.rescued,
        "remark": None,
    }


def covariance_records(boot: JointBootstrap, key: dict) -> list[dict]:
    """The covariance of (E, A, α, B, β) as one record per row parameter."""
    cov = boot.covariance()
    if cov is None:
        return []
    return [
        {**key, "param": p, **{q: float(cov[i, j]) for j, q in enumerate(PARAMS)}}
        for i, p in enumerate(PARAMS)
    ]
