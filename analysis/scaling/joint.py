"""Chinchilla's joint form L(N, D) = E + A·N^−α + B·D^−β (huber.fit_joint) with intervals: a
bootstrap over cells (cells.py), each resample refitted from the full fit's optimum (one start,
not the grid: the resamples differ little from the data, and the grid would cost 18× as much),
percentile intervals for E, A, α, B, β, and the covariance of the five over the resamples.

A resample whose refit cannot be made (fewer than three distinct N or D drawn) or whose
minimiser reports no convergence is left out of the intervals and counted (`failed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.cells import Cells
from analysis.scaling.huber import JointFit, fit_joint
from analysis.scaling.powerlaw import NotEnoughData

PARAMS = ("E", "A", "alpha", "B", "beta")
"""The joint form's parameters, in the order of every array here."""


@dataclass(frozen=True)
class JointBootstrap:
    """The full fit and its resamples: `draws` (B_ok, 5) of (E, A, α, B, β), the resamples
    asked for and how many were left out (`failed`), and the cells' log residuals about the
    full fit (P,), which a prediction interval adds to the resampled curves."""

    fit: JointFit
    draws: np.ndarray
    resamples: int
    failed: int
    residuals: np.ndarray
    how: str

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


JointFitter = Callable[..., JointFit]
"""fit(n, d, m, starts=None) -> JointFit: huber.fit_joint, or a form written as it (holdout.py's
M = E + A·N^−α as the joint form with B = 0)."""


def bootstrap_joint(
    cells: Cells, *, n_boot: int, seed: int, fit: JointFitter = fit_joint
) -> JointBootstrap:
    """Fit the cells' means and refit `n_boot` resamples from the fit's optimum; NotEnoughData
    when the cells cannot support the full fit."""
    values = cells.means()
    full = fit(cells.n, cells.d, values)
    start = [np.array(full.theta)]
    rows, failed = [], 0
    for n, d, v in cells.resamples(n_boot, seed):
        try:
            f = fit(n, d, v, starts=start)
        except NotEnoughData:
            failed += 1
            continue
        if not f.converged:
            failed += 1
            continue
        rows.append((f.E, f.A, f.alpha, f.B, f.beta))
    residuals = np.log(np.abs(values)) - np.log(np.abs(full.predict(cells.n, cells.d)))
    return JointBootstrap(
        fit=full,
        draws=np.array(rows, dtype=np.float64).reshape(-1, 5),
        resamples=n_boot,
        failed=failed,
        residuals=residuals,
        how=cells.how(n_boot, seed),
    )


def joint_record(boot: JointBootstrap, level: float) -> dict:
    """E, A, α, B, β with their intervals, the fit's loss and starts, the resamples."""
    f = boot.fit
    record: dict = {}
    for j, (name, v) in enumerate(zip(PARAMS, (f.E, f.A, f.alpha, f.B, f.beta), strict=True)):
        ci = boot.interval(j, level) or (None, None)
        record |= {name: v, f"{name}_ci_low": ci[0], f"{name}_ci_high": ci[1]}
    return {
        **record,
        "huber_loss": f.loss,
        "starts": f.starts,
        "starts_agreeing": f.agree,
        "bootstrap_resamples": boot.resamples - boot.failed,
        "bootstrap_failed": boot.failed,
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
