"""Many fits at once (analysis/scaling/batch_fit.py): the batch against least_squares one by one
on resamples of a published table, and row weights against a case solved by hand.

The hand case: with E held at 1e-12 (negligible) and α at 0.5, the form's log is
a − 0.5·log N, so each point's log residual is a − z with z = log M + 0.5·log N, and the fit
minimises Σ w·Huber_δ(a − z) over a alone. Points at z = 1, 1, 1, 2: unweighted, a sits in the
quadratic zone of the three z = 1 points, pulled by the linear slope δ of the fourth:
3·(a − 1) = δ, a = 1 + δ/3. With weight 4 on the z = 2 point, its side outweighs (4 > 3): a
sits within δ of 2, where 4·(a − 2) + 3·δ = 0, a = 2 − 3δ/4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.scaling.batch_fit import solve_batch
from analysis.scaling.cells import Cells
from analysis.scaling.forms import HUBER_DELTA, JointForm
from analysis.scaling.huber import fit_joint
from analysis.scaling.joint import bootstrap_joint
from analysis.scaling.robust_fit import Points, refit

GADRE = Path(__file__).parent / "data" / "gadre_overtraining.csv"
HAND_FORM = JointForm(fixed=(("E", 1e-12), ("alpha", 0.5)), n_only=True)
N = np.array([1e6, 4e6, 1.6e7, 6.4e7])
Z = np.array([1.0, 1.0, 1.0, 2.0])
M = np.exp(Z) * N**-0.5  # log M + 0.5·log N = z


@pytest.mark.parametrize(
    ("weights", "a"),
    [(None, 1 + HUBER_DELTA / 3), (np.array([1.0, 1.0, 1.0, 4.0]), 2 - 0.75 * HUBER_DELTA)],
)
def test_weights_move_the_fit_as_the_hand_solution_says(weights, a) -> None:
    full = fit_joint(N, np.ones_like(N), M, form=HAND_FORM, weights=weights)
    assert np.log(full.A) == pytest.approx(a, abs=1e-7)
    w = None if weights is None else weights[None, :]
    batch = solve_batch(
        HAND_FORM, np.log(N)[None, :], np.zeros((1, 4)), np.log(M)[None, :], w, np.zeros(5)
    )
    assert batch.converged[0] and batch.theta[0, 1] == pytest.approx(a, abs=1e-7)
    # Through the cells (--weights): a cell's weight is its rows' sum, so the z = 2 point as
    # four rows of weight 1 is the same fit as one row of weight 4.
    if weights is not None:
        rows = Cells.of(np.r_[N, [N[3]] * 3], None, np.r_[M, [M[3]] * 3], weights=np.ones(7))
        boot = bootstrap_joint(rows, n_boot=20, seed=0, form=HAND_FORM)
        assert np.log(boot.fit.A) == pytest.approx(a, abs=1e-7)


def test_the_batch_ends_where_least_squares_does_on_resamples() -> None:
    runs = pl.read_csv(GADRE).filter((pl.col("held_out") == 0) & (pl.col("dataset") == "c4"))
    n, d, m = (runs[c].to_numpy().astype(np.float64) for c in ("N", "D", "loss"))
    cells = Cells.of(n, d, m)
    form = JointForm(tie=True)
    full = fit_joint(cells.n, cells.d, cells.means(), form=form)
    idx, drawn = cells.draws(20, 0)
    start = np.array(full.theta)
    batch = solve_batch(
        form, np.log(cells.n[idx]), np.log(cells.d[idx]), np.log(drawn), None, start
    )
    assert batch.converged.all()
    for b in range(idx.shape[0]):
        one, how = refit(form, Points.of(cells.n[idx[b]], cells.d[idx[b]], drawn[b]), start)
        assert how == "warm"
        assert batch.theta[b, [0, 2, 3]] == pytest.approx(one.theta[[0, 2, 3]], abs=1e-4)
        assert batch.loss[b] <= one.loss * (1 + 1e-6)
