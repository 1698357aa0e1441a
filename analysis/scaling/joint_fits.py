"""The joint L(N, D) of every fit group and metric, as records: the fit with bootstrap intervals
(joint.py), the covariance of its parameters, the compute-optimal allocation at each budget
(optimal.py), the held-out check of the largest N (holdout.py), and the series the frontier
figure draws. A cell is a size of the group (points.SIZE_KEY: model, N and step, or a table's
(N, D)) at the mean D of its trials, its units the trials' values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from analysis.arms import plain_value
from analysis.scaling.cells import Cells
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
    *("huber_loss", "starts", "starts_agreeing", "bootstrap_resamples", "bootstrap_failed"),
    "remark",
)
"""The fields of a joint fit's record (every record has each, None where undefined)."""


@dataclass
class JointFound:
    """The records of every joint table and the frontier figure's series."""

    joint: list[dict[str, Any]] = field(default_factory=list)
    covariance: list[dict[str, Any]] = field(default_factory=list)
    optimal: list[dict[str, Any]] = field(default_factory=list)
    holdout: list[dict[str, Any]] = field(default_factory=list)
    figure: list[dict[str, Any]] = field(default_factory=list)


def group_cells(part: pl.DataFrame) -> Cells:
    """The cells of one group and metric's trials: per size, the mean D and the trials' values."""
    sizes = (
        part.filter(pl.col("D").is_not_null())
        .group_by(list(SIZE_KEY))
        .agg(pl.col("D").mean(), pl.col("value").sort())
        .sort(["N", "D"])
    )
    return Cells(
        sizes["N"].to_numpy().astype(np.float64),
        sizes["D"].to_numpy().astype(np.float64),
        tuple(np.asarray(v, dtype=np.float64) for v in sizes["value"].to_list()),
    )


def joint_fits(
    frame: pl.DataFrame,
    gcols: list[str],
    metrics: Sequence[str],
    *,
    n_boot: int,
    level: float,
    seed: int,
    budgets: Sequence[float] | None,
    k: float,
) -> JointFound:
    """Every group and metric's joint fit and what follows from it (module docstring)."""
    found = JointFound()
    keys = [*gcols, "metric"]
    wanted = frame.filter(pl.col("metric").is_in(list(metrics)) & pl.col("D").is_not_null())
    parts = wanted.partition_by(keys, as_dict=True, maintain_order=True)
    for values in sorted(parts, key=lambda v: tuple(str(x) for x in v)):
        key = {c: plain_value(v) for c, v in zip(keys, values, strict=True)}
        cells = group_cells(parts[values])
        rec = {**key, "points": cells.size, **dict.fromkeys(JOINT_KEYS)}
        try:
            boot = bootstrap_joint(cells, n_boot=n_boot, seed=seed)
        except NotEnoughData as err:
            found.joint.append({**rec, "remark": str(err)})
            continue
        found.joint.append({**rec, **joint_record(boot, level), **exponent_record(boot, level)})
        found.covariance += covariance_records(boot, key)
        at = list(budgets) if budgets else default_budgets(cells.n, cells.d, k)
        found.optimal += [{**key, **r} for r in optimal_records(boot, at, level, k)]
        held = holdout_cells(
            cells, form="joint", axis="C", n_boot=n_boot, level=level, seed=seed, k=k
        )
        found.holdout.append({**key, "axis": "N, D", "at": None, **held})
        found.figure.append(_frontier_series(key, cells, boot, k, level))
    return found


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
        "group": ", ".join(f"{c}={v}" for c, v in key.items() if c != "metric") or "all",
        "metric": key["metric"],
        "points": {"C": c, "N": cells.n, "D": cells.d, "value": cells.means()},
        "frontier": column,
    }
