"""The field's fits of one line, beside the command's own: the saturating form by the Huber loss
(huber.py) with bootstrap intervals over (size, seed) units, its leave-one-size-out and
extrapolation errors, and the paired comparison of CE's and EE's prediction errors — both forms'
leave-one-size-out error and the error extrapolating to the largest size, EE − CE, with a
bootstrap interval whose every resample draws the same units for both metrics (not raw R², whose
meaning depends on each metric's range).

Refits (leave one size out, extrapolate, every resample) start from the full fit's optimum: the
grid of starts runs once per line and metric.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis.scaling.batch_fit import solve_batch
from analysis.scaling.bootstrap import percentile_ci, resampled_points, unit_draws
from analysis.scaling.cells import Cells
from analysis.scaling.checks import extrapolation_error, loo_error
from analysis.scaling.forms import JointForm
from analysis.scaling.huber import HuberFit, fit_huber
from analysis.scaling.powerlaw import (
    MIN_BOOTSTRAP_POINTS,
    NotEnoughData,
    distinct_count,
    fit_power_law,
    log_points,
)
from analysis.scaling.rules import smaller_error

Refit = Callable[[np.ndarray, np.ndarray], Any]
HUBER_KEYS = (
    *("E", "E_ci_low", "E_ci_high", "A", "A_ci_low", "A_ci_high"),
    *("alpha", "alpha_ci_low", "alpha_ci_high", "huber_loss", "starts", "starts_agreeing"),
    *("loo_error", "extrapolation_error", "bootstrap_resamples", "remark"),
)
"""The fields of a Huber fit's record (every record has each, None where undefined)."""
PREDICTION_KEYS = (
    *("loo_ce", "loo_ee", "loo_diff", "loo_diff_ci_low", "loo_diff_ci_high"),
    *("extrap_ce", "extrap_ee", "extrap_diff", "extrap_diff_ci_low", "extrap_diff_ci_high"),
    *("bootstrap_resamples", "loo_favours", "extrap_favours", "remark"),
)


@dataclass(frozen=True)
class Units:
    """The (size, seed) units of one line and metric, ordered size by size: x (U,), one value
    per unit (U,) — or two, `second`, for a paired comparison — and the units per size."""

    x: np.ndarray
    value: np.ndarray
    counts: list[int]
    second: np.ndarray | None = None

    @staticmethod
    def of(frame: pl.DataFrame, first: str, second: str | None = None) -> Units:
        """From a frame of trials with columns x and `first` (and `second`), sorted by x."""
        frame = frame.sort("x", maintain_order=True)
        counts = frame.group_by("x", maintain_order=True).len()["len"].to_list()
        return Units(
            x=frame["x"].to_numpy().astype(np.float64),
            value=frame[first].to_numpy().astype(np.float64),
            counts=counts,
            second=None if second is None else frame[second].to_numpy().astype(np.float64),
        )

    def points(self, means: bool, values: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """(x, M) of the line: per-size means (`means`) or every unit."""
        v = self.value if values is None else values
        if not means:
            return self.x, v
        edges = np.concatenate([[0], np.cumsum(self.counts)]).astype(int)
        return self.x[edges[:-1]], np.array([v[a:b].mean() for a, b in itertools.pairwise(edges)])


def _huber_refit(start: HuberFit, form: JointForm | None = None) -> Refit:
    def refit(nn: np.ndarray, mm: np.ndarray) -> HuberFit:
        return fit_huber(nn, mm, starts=[np.array(start.theta)], form=form)

    return refit


def _plain_refit(nn: np.ndarray, mm: np.ndarray) -> Any:
    return fit_power_law(nn, mm, ci=False)


def huber_record(
    units: Units,
    *,
    means: bool,
    n_boot: int,
    level: float,
    seed: int,
    form: JointForm | None = None,
) -> dict:
    """The Huber fit of one line: E, A, α with percentile intervals over stratified unit
    resamples, the fit's loss and starts, and its leave-one-size-out and extrapolation errors;
    `form`: the line's form (a fixed E, δ; forms.JointForm.line_form)."""
    n, m = units.points(means)
    blank = dict.fromkeys(HUBER_KEYS)
    try:
        fit = fit_huber(n, m, form=form)
    except NotEnoughData as err:
        return {**blank, "remark": str(err)}
    refit = _huber_refit(fit, form)
    record = {
        **blank,
        "E": fit.E,
        "A": fit.A,
        "alpha": fit.alpha,
        "huber_loss": fit.loss,
        "starts": fit.starts,
        "starts_agreeing": fit.agree,
        "loo_error": loo_error(n, m, refit),
        "extrapolation_error": extrapolation_error(n, m, refit),
        "remark": fit.remark,
    }
    draws = unit_draws(units.counts, n_boot, seed)
    if draws is None and len(units.counts) < MIN_BOOTSTRAP_POINTS:
        return {**record, "bootstrap_resamples": 0, "remark": _one_unit(fit.remark)}
    if draws is None:  # one trial per size, but sizes enough to resample them (as bootstrap.py)
        cells = Cells.of(units.x, None, units.value)
        idx, drawn = cells.draws(n_boot, seed)
        resamples = [(cells.n[idx[b]], drawn[b]) for b in range(n_boot)]
    else:
        bx, by = resampled_points(units.x, units.value, units.counts, draws, means)
        resamples = [(bx if means else bx[b], by[b]) for b in range(n_boot)]
    params = _refit_resamples(resamples, fit, form)
    arr = np.array(params).reshape(-1, 3)
    for j, name in enumerate(("E", "A", "alpha")):
        ci = percentile_ci(arr[:, j], level)
        record[f"{name}_ci_low"], record[f"{name}_ci_high"] = ci or (None, None)
    return {**record, "bootstrap_resamples": len(params)}


def _refit_resamples(
    resamples: list[tuple[np.ndarray, np.ndarray]], fit: HuberFit, form: JointForm | None
) -> list[tuple[float, float, float]]:
    """(E, A, α) of every resample that can be fitted, refitted from the full fit's optimum
    together (batch_fit.solve_batch); one the batch does not finish is refitted alone by least
    squares, as fit_huber(starts=[...]) would."""
    form = form or JointForm(n_only=True)
    fine, logs = [], []
    for i, (xb, vb) in enumerate(resamples):
        try:
            x, y, sign = log_points(xb, vb)
        except NotEnoughData:
            continue
        if distinct_count(xb) < len(form.free) + 1:
            continue  # fit_huber: NotEnoughData
        fine.append(i)
        logs.append((x, y, sign))
    if not fine:
        return []
    x = np.array([p[0] for p in logs])
    y = np.array([p[1] for p in logs])
    start = np.r_[np.asarray(fit.theta), -np.inf, 1.0]
    batch = solve_batch(form, x, np.zeros_like(x), y, None, start)
    out = []
    for k, i in enumerate(fine):
        if batch.converged[k]:
            e, a, alpha = batch.theta[k, :3]
            sign = logs[k][2]
            out.append((sign * float(np.exp(e)), sign * float(np.exp(a)), float(alpha)))
            continue
        f = fit_huber(*resamples[i], starts=[np.array(fit.theta)], form=form)
        out.append((f.E, f.A, f.alpha))
    return out


def _one_unit(remark: str | None) -> str:
    why = "one trial per size: no bootstrap interval"
    return why if remark is None else f"{remark}; {why}"


def _errors(n: np.ndarray, m: np.ndarray, refit: Refit) -> tuple[float | None, float | None]:
    """(leave-one-size-out RMS relative error, |extrapolation error| at the largest size)."""
    ext = extrapolation_error(n, m, refit)
    return loo_error(n, m, refit), None if ext is None else abs(ext)


def _refits(units: Units, means: bool) -> dict[str, tuple[Refit, Refit] | str]:
    """Per form the refit of CE and of EE, or why the form cannot be fitted to these points."""
    out: dict[str, tuple[Refit, Refit] | str] = {"plain": (_plain_refit, _plain_refit)}
    try:
        ce = fit_huber(*units.points(means))
        ee = fit_huber(*units.points(means, units.second))
        out["huber"] = (_huber_refit(ce), _huber_refit(ee))
    except NotEnoughData as err:
        out["huber"] = str(err)
    return out


def prediction_records(
    units: Units, *, means: bool, n_boot: int, level: float, seed: int
) -> list[dict[str, Any]]:
    """Per form (plain, huber): CE's and EE's leave-one-size-out error and |extrapolation error|,
    the differences EE − CE with percentile intervals over paired, stratified unit resamples
    (the same units for both metrics), and which metric each criterion favours."""
    assert units.second is not None
    out = []
    draws = unit_draws(units.counts, n_boot, seed)
    for form, refits in _refits(units, means).items():
        if isinstance(refits, str):
            out.append({"form": form, **dict.fromkeys(PREDICTION_KEYS), "remark": refits})
            continue
        n, ce = units.points(means)
        _, ee = units.points(means, units.second)
        loo_ce, ext_ce = _errors(n, ce, refits[0])
        loo_ee, ext_ee = _errors(n, ee, refits[1])
        rec = {
            "form": form,
            "loo_ce": loo_ce,
            "loo_ee": loo_ee,
            "loo_diff": None if None in (loo_ce, loo_ee) else loo_ee - loo_ce,
            "extrap_ce": ext_ce,
            "extrap_ee": ext_ee,
            "extrap_diff": None if None in (ext_ce, ext_ee) else ext_ee - ext_ce,
        }
        rec |= _paired_intervals(units, means, draws, refits, level)
        rec["loo_favours"] = smaller_error(rec["loo_diff_ci_low"], rec["loo_diff_ci_high"])
        rec["extrap_favours"] = smaller_error(rec["extrap_diff_ci_low"], rec["extrap_diff_ci_high"])
        out.append(rec)
    return out


def _paired_intervals(
    units: Units,
    means: bool,
    draws: np.ndarray | None,
    refits: tuple[Refit, Refit],
    level: float,
) -> dict[str, Any]:
    """Percentile intervals of the EE − CE error differences over the resamples."""
    empty = dict.fromkeys(
        ("loo_diff_ci_low", "loo_diff_ci_high", "extrap_diff_ci_low", "extrap_diff_ci_high")
    )
    if draws is None:
        return {**empty, "bootstrap_resamples": 0, "remark": "one trial per size: no interval"}
    bx, bce = resampled_points(units.x, units.value, units.counts, draws, means)
    _, bee = resampled_points(units.x, units.second, units.counts, draws, means)
    loo, ext = [], []
    for b in range(draws.shape[0]):
        xb = bx if means else bx[b]
        lc, ec = _errors(xb, bce[b], refits[0])
        le, ee = _errors(xb, bee[b], refits[1])
        if None not in (lc, le):
            loo.append(le - lc)
        if None not in (ec, ee):
            ext.append(ee - ec)
    lo = percentile_ci(np.array(loo), level) or (None, None)
    eo = percentile_ci(np.array(ext), level) or (None, None)
    return {
        "loo_diff_ci_low": lo[0],
        "loo_diff_ci_high": lo[1],
        "extrap_diff_ci_low": eo[0],
        "extrap_diff_ci_high": eo[1],
        "bootstrap_resamples": draws.shape[0],
        "remark": None,
    }
