"""The signs that a fitted law should not be trusted beyond its points, each a short text the
table's `flags` column and the report show (the residual figure beside them):

- its irreducible part E lies above a loss the largest compute budget already reached (the law
  says no run can get there, yet one did);
- the compute-optimal loss it predicts at 10× the largest compute is worse than a loss already
  observed (more compute would make things worse: the form does not describe the points);
- its log residuals at the smallest or the largest compute budget are off by more than
  END_RESIDUAL on average (the form bends away from the points at an end, where it is used);
- its held-out check missed (more observed values outside their prediction intervals than
  chance allows: holdout.missed);
- its full fit did not converge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.scaling.holdout import HOLDOUT_BUDGET
from analysis.scaling.joint import JointBootstrap, predict_with
from analysis.scaling.optimal import allocation

END_RESIDUAL = 0.03
"""A mean log residual (≈ relative error) beyond 3% over an end budget's cells flags the fit: the
issue's doubtful fits missed by 5–15% at the ends, a good one by under 1%."""


def _end_residuals(boot: JointBootstrap, c: np.ndarray) -> list[str]:
    """The end budgets (C within a factor HOLDOUT_BUDGET of the smallest or largest) whose
    cells the fit misses on average by more than END_RESIDUAL."""
    out = []
    for name, at in (
        ("smallest", c < c.min() * HOLDOUT_BUDGET),
        ("largest", c > c.max() / HOLDOUT_BUDGET),
    ):
        mean = float(np.mean(boot.residuals[at]))
        if abs(mean) > END_RESIDUAL:
            out.append(f"residuals at the {name} budget {100 * mean:+.1f}% on average")
    return out


def fit_flags(boot: JointBootstrap, held: dict[str, Any], k: float) -> list[str]:
    """The flags of one joint fit (module docstring), given its held-out check's record."""
    fit, cells = boot.fit, boot.cells
    values = cells.means()
    c = k * cells.n * cells.d
    top = c > c.max() / HOLDOUT_BUDGET
    lowest = float(values[top].min())
    out = []
    if lowest < fit.E:
        out.append(
            f"E {fit.E:.4g} above the loss {lowest:.4g} already reached at the largest "
            f"budget (C > {c.max() / HOLDOUT_BUDGET:.3g})"
        )
    if not boot.form.n_only and fit.B > 0:
        n_opt, d_opt = allocation(fit.params, np.array([10 * c.max()]), k)
        beyond = float(predict_with(fit.params, n_opt, d_opt)[0, 0])
        if beyond > float(values.min()):
            out.append(
                f"at 10× the largest compute the optimal loss {beyond:.4g} is worse than "
                f"{float(values.min()):.4g}, already observed"
            )
    out += _end_residuals(boot, c)
    if held.get("missed"):
        out.append(
            f"held-out check: {held['inside']}/{held['held_out_points']} inside the prediction "
            f"interval (mean |error| {100 * (held['mean_abs_error'] or 0):.2g}%)"
        )
    if not fit.converged:
        out.append("the full fit did not converge")
    return out


def line_flags(record: dict[str, Any], x: np.ndarray, m: np.ndarray) -> list[str]:
    """The flags of a line's Huber fit (`record`: its E; x and M its points): E above the
    value already reached at the largest x."""
    if record.get("E") is None:
        return []
    x, m = np.asarray(x, dtype=np.float64), np.asarray(m, dtype=np.float64)
    at_top = m[x == x.max()]
    if at_top.size and np.all(m > 0) and record["E"] > float(at_top.min()):
        return [f"E {record['E']:.4g} above the value {float(at_top.min()):.4g} at the largest x"]
    return []
