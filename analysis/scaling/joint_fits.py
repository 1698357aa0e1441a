"""The joint L(N, D) of every fit group and metric, as records: the fit with bootstrap intervals
(joint.py), the covariance of its parameters, the compute-optimal allocation at each budget
(optimal.py), the held-out check of the largest budget (holdout.py), the flags a doubtful fit
raises (flags.py), and the series the frontier and residual figures draw. A cell is a size of
the group (points.SIZE_KEY: model, N and step, or a table's (N, D)) at the mean D of its trials,
its units the trials' values (declared seeds for a store; for a table, where --seed-column
says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from analysis.arms import plain_value
from analysis.scaling.cells import Cells
from analysis.scaling.flags import fit_flags
from analysis.scaling.forms import JointForm
from analysis.scaling.holdout import holdout_cells
from analysis.scaling.joint import (
    PARAMS,
    JointBootstrap,
    bootstrap_joint,
    covariance_records,
    joint_record,
)
from analysis.scaling.optimal import default_budgets, exponent_record, optimal_records
from analysis.scaling.points import SIZE_KEY
from analysis.scaling.powerlaw import NotEnoughData

JOINT_KEYS = (
    *(k for p in PARAMS for k in (p, f"{p}_ci_low", f"{p}_ci_high")),
    *("a_opt", "a_opt_ci_low", "a_opt_ci_high", "b_opt", "b_opt_ci_low", "b_opt_ci_high"),
    *("huber_loss", "starts", "starts_agreeing", "converged", "form", "resampling"),
    *("bootstrap_resamples", "bootstrap_failed", "bootstrap_degenerate"),
    *("bootstrap_not_converged", "bootstrap_rescued", "flags", "remark"),
)
"""The fields of a joint fit's record (every record has each, None where undefined)."""


@dataclass
class JointFound:
    """The records of every joint table, the figures' series, and the fits themselves (a
    prediction or a comparison reuses them instead of refitting)."""

    joint: list[dict[str, Any]] = field(default_factory=list)
    covariance: list[dict[str, Any]] = field(default_factory=list)
    optimal: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)
    figure: list[dict[str, Any]] = field(default_factory=list)
    residuals: list[dict[str, Any]] = field(default_factory=list)
    fits: dict[tuple, JointBootstrap] = field(default_factory=dict)


def group_cells(part: pl.DataFrame, *, seeded: bool = True) -> Cells:
    """The cells of one group and metric's trials: per size, the mean D of its trials and the
    trials' values (a `weight` column, where there is one, weighs them)."""
    rows = part.filter(pl.col("D").is_not_null()).with_columns(
        pl.col("D").mean().over(list(SIZE_KEY), mapping_strategy="group_to_rows").alias("D")
    )
    weights = rows["weight"].to_numpy() if "weight" in rows.columns else None
    return Cells.of(
        rows["N"].to_numpy().astype(np.float64),
        rows["D"].to_numpy().astype(np.float64),
        rows["value"].to_numpy().astype(np.float64),
        seeded=seeded,
        weights=weights,
    )


@dataclass(frozen=True)
class JointOptions:
    """How the joint fits are made: resamples, level, seed, budgets, k in C = k·N·D, the form,
    and whether rows repeating a cell are declared seeds."""

    n_boot: int
    level: float
    seed: int
    budgets: Sequence[float] | None
    k: float
    form: JointForm = field(default_factory=JointForm)
    seeded: bool = True


def joint_fits(
    frame: pl.DataFrame, gcols: list[str], metrics: Sequence[str], opts: JointOptions
) -> JointFound:
    """Every group and metric's joint fit and what follows from it (module docstring)."""
    found = JointFound()
    keys = [*gcols, "metric"]
    wanted = frame.filter(pl.col("metric").is_in(list(metrics)) & pl.col("D").is_not_null())
    parts = wanted.partition_by(keys, as_dict=True, maintain_order=True)
    for values in sorted(parts, key=lambda v: tuple(str(x) for x in v)):
        key = {c: plain_value(v) for c, v in zip(keys, values, strict=True)}
        cells = group_cells(parts[values], seeded=opts.seeded)
        rec = {**key, "points": cells.size, **dict.fromkeys(JOINT_KEYS)}
        try:
            boot = bootstrap_joint(cells, n_boot=opts.n_boot, seed=opts.seed, form=opts.form)
        except NotEnoughData as err:
            found.joint.append({**rec, "remark": str(err)})
            continue
        found.fits[tuple(values)] = boot
        held = holdout_cells(
            cells,
            form="joint",
            axis="C",
            n_boot=opts.n_boot,
            level=opts.level,
            seed=opts.seed,
            k=opts.k,
            joint_form=opts.form,
        )
        flags = fit_flags(boot, held, opts.k)
        found.joint.append(
            {
                **rec,
                **joint_record(boot, opts.level),
                **exponent_record(boot, opts.level),
                "flags": "; ".join(flags) or None,
            }
        )
        found.covariance += covariance_records(boot, key)
        at = list(opts.budgets) if opts.budgets else default_budgets(cells.n, cells.d, opts.k)
        found.optimal += [{**key, **r} for r in optimal_records(boot, at, opts.level, opts.k)]
        found.holdout.append({**key, "axis": "N, D", "at": None, **held})
        found.figure.append(_frontier_series(key, cells, boot, opts.k, opts.level))
        found.residuals.append(_residual_series(key, cells, boot, opts.k, flags))
    return found


def _label(key: dict[str, Any]) -> str:
    return ", ".join(f"{c}={v}" for c, v in key.items() if c != "metric") or "all"


def _frontier_series(
    key: dict[str, Any], cells: Cells, boot: JointBootstrap, k: float, level: float
) -> dict[str, Any]:
    """The data points (C, N, D, value) and the optimal N and D over the compute range and a
    decade beyond, with their intervals, for figures.plot_frontier."""
    c = k * cells.n * cells.d
    grid = np.geomspace(c.min(), c.max() * 10, 40)
    rows = optimal_records(boot, grid, level, k)
    column = {
        q: np.array([np.nan if r[q] is None else r[q] for r in rows], dtype=np.float64)
        for q in rows[0]
    }
    return {
        "group": _label(key),
        "metric": key["metric"],
        "points": {"C": c, "N": cells.n, "D": cells.d, "value": cells.means()},
        "frontier": column,
    }


def _residual_series(
    key: dict[str, Any], cells: Cells, boot: JointBootstrap, k: float, flags: list[str]
) -> dict[str, Any]:
    """The cells' log residuals about the joint fit against compute, with their tokens per
    parameter, for plots.plot_joint_residuals."""
    return {
        "group": _label(key),
        "metric": key["metric"],
        "C": k * cells.n * cells.d,
        "N": cells.n,
        "D": cells.d,
        "residual": boot.residuals,
        "flags": flags,
    }
