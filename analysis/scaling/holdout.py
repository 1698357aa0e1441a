"""Predict before you run, and the check that says whether to trust it.

A prediction at a planned (N, D) is the full fit's value with a prediction interval: every
bootstrap resample's curve (joint.py) at that point times e^r, r a log residual of the cells
about the full fit drawn at random, so the interval holds where one more run would land (the
curve's uncertainty and the scatter of runs about it), not only where the curve is.

The held-out check refits without the largest point(s) on the fit's axis, predicts them, and
reports the errors against the intervals: a law that cannot predict its own largest size from
the smaller ones should not be trusted further out. A line's check holds out its largest size
(or compute); the joint fit's holds out its largest compute budget, every cell within a factor
HOLDOUT_BUDGET of the largest C (the largest IsoFLOP budget of a Chinchilla-like table). For a
plain power law (a line in log-log) the interval is the least-squares prediction interval on
log M.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from analysis.scaling.cells import Cells
from analysis.scaling.checks import canonical
from analysis.scaling.forms import JointForm
from analysis.scaling.joint import JointBootstrap, bootstrap_joint, predict_with
from analysis.scaling.powerlaw import NotEnoughData, distinct_count, fit_power_law
from analysis.seed_stats import t_quantile

HOLDOUT_KEYS = (
    *("form", "held_out", "held_out_points", "fit_points", "predicted", "pi_low", "pi_high"),
    *("observed", "error", "mean_abs_error", "inside", "missed", "remark"),
)
"""The fields of a held-out check's record (None where undefined)."""
HOLDOUT_BUDGET = 2.0
"""The joint fit's check holds out the cells with C above the largest C / this."""
MISS_P = 0.05
"""A check missed when this few held-out points inside their intervals is this unlikely."""


def missed(record: dict, level: float) -> bool | None:
    """Whether the held-out points fell outside their `level` intervals more often than chance
    allows: P(at least that many outside | each outside with 1 − level) ≤ MISS_P (one point
    outside its 95% interval is a miss; 2 of 24 is not). None without an interval."""
    if record.get("inside") is None or not record.get("held_out_points"):
        return None
    outside = record["held_out_points"] - record["inside"]
    if outside == 0:
        return False
    chance = stats.binom.sf(outside - 1, record["held_out_points"], 1 - level)
    return bool(chance <= MISS_P * (1 + 1e-9))  # one of one at 95% is 0.05 up to rounding


def bootstrap_n(
    cells: Cells, *, n_boot: int, seed: int, form: JointForm | None = None
) -> JointBootstrap:
    """The Huber fit of M = E + A·N^−α bootstrapped over cells like the joint form (the joint
    form with B = 0); NotEnoughData when the cells cannot support it."""
    return bootstrap_joint(cells, n_boot=n_boot, seed=seed, form=form or JointForm(n_only=True))


def prediction(
    boot: JointBootstrap, n: np.ndarray, d: np.ndarray, level: float, seed: int
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The fit's value at each (n, d) (K,) and the prediction interval's ends (K,) each (None
    without resamples)."""
    f = boot.fit
    point = predict_with(np.array([[f.E, f.A, f.alpha, f.B, f.beta]]), n, d)[0]
    if boot.draws.shape[0] == 0:
        return point, None, None
    curves = predict_with(boot.draws, n, d)  # (B, K)
    rng = np.random.default_rng(seed)
    samples = curves * np.exp(rng.choice(boot.residuals, size=curves.shape))
    lo, hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return point, lo, hi


def _summary(form: str, held: str, fit_points: int, pred, lo, hi, observed: np.ndarray) -> dict:
    """A held-out check's record from the predictions (K,) of the K held-out points."""
    err = pred / observed - 1.0
    one = observed.size == 1
    inside = None if lo is None else int(np.sum((observed >= lo) & (observed <= hi)))
    return {
        **dict.fromkeys(HOLDOUT_KEYS),
        "form": form,
        "held_out": held,
        "held_out_points": int(observed.size),
        "fit_points": fit_points,
        "predicted": float(pred[0]) if one else None,
        "pi_low": float(lo[0]) if one and lo is not None else None,
        "pi_high": float(hi[0]) if one and hi is not None else None,
        "observed": float(observed[0]) if one else None,
        "error": float(err[0]) if one else None,
        "mean_abs_error": float(np.mean(np.abs(err))),
        "inside": inside,
    }


def holdout_cells(
    cells: Cells,
    *,
    form: str,
    axis: str,
    n_boot: int,
    level: float,
    seed: int,
    k: float = 6.0,
    joint_form: JointForm | None = None,
) -> dict:
    """Refit the bootstrapped form without the largest cells and check its predictions of them:
    "joint" holds out the largest compute budget, "huber" (a line: x in `cells.n`) its largest
    x, named by `axis`; `joint_form` is the form fitted (default: every parameter free)."""
    if form == "joint":
        c = cells.n * cells.d
        largest = c > c.max() / HOLDOUT_BUDGET
        held = f"C > {k * c.max() / HOLDOUT_BUDGET:.3g}"
    else:
        largest = cells.n == cells.n.max()
        held = f"{axis} = {cells.n.max():.3g}"
    train, test = cells.subset(~largest), cells.subset(largest)
    chosen = joint_form or JointForm()
    if form != "joint":
        chosen = chosen if chosen.n_only else chosen.line_form()
    try:
        boot = bootstrap_joint(train, n_boot=n_boot, seed=seed, form=chosen)
    except NotEnoughData as err:
        return {
            **dict.fromkeys(HOLDOUT_KEYS),
            "form": form,
            "held_out": held,
            "remark": f"without the largest N: {err}",
        }
    pred, lo, hi = prediction(boot, test.n, test.d, level, seed)
    record = _summary(form, held, train.size, pred, lo, hi, test.means())
    record["missed"] = missed(record, level)
    if lo is None:
        record["remark"] = "no resample could be refitted: no interval"
    return record


def holdout_plain(n: np.ndarray, m: np.ndarray, axis: str, level: float) -> dict:
    """The plain power law's check: the line through every size but the largest on `axis`, its
    value at the largest with the least-squares prediction interval on log |M|."""
    n, m = canonical(n, m)
    largest = n.max()
    keep = n < largest
    held = f"{axis} = {largest:.3g}"
    base = {**dict.fromkeys(HOLDOUT_KEYS), "form": "plain", "held_out": held}
    if distinct_count(n[keep]) < 3:
        return {**base, "remark": "fewer than 3 smaller sizes: no check"}
    fit = fit_power_law(n[keep], m[keep], ci=False)
    x = np.log(n[keep])
    x0 = math.log(largest)
    dof = x.size - 2
    s = math.sqrt(fit.sse / dof) if dof > 0 else math.nan
    half = (
        t_quantile((1 + level) / 2, dof)
        * s
        * math.sqrt(1 + 1 / x.size + (x0 - x.mean()) ** 2 / float(np.sum((x - x.mean()) ** 2)))
        if dof > 0
        else math.nan
    )
    y0 = fit.c + fit.a * x0
    sign = fit.sign
    pred = np.array([sign * math.exp(y0)])
    ends = sorted((sign * math.exp(y0 - half), sign * math.exp(y0 + half)))
    observed = np.array([float(m[~keep].mean())])
    if not math.isfinite(half):
        return {
            **_summary("plain", held, int(x.size), pred, None, None, observed),
            "remark": "no residual degrees of freedom: no interval",
        }
    record = _summary(
        "plain", held, int(x.size), pred, np.array([ends[0]]), np.array([ends[1]]), observed
    )
    return record | {"missed": missed(record, level)}
