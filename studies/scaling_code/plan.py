"""Study 4's power analysis, before registration (README, "Power"):

    python studies/scaling_code/plan.py RESULTS

The seed-to-seed spread comes from the gate: per size the two seeds (grid seed 0, gate seed 1)
at the chosen rate, pooled over the sizes (`analysis.scaling.gate.pooled_sd`) for each metric.
S4 pairs compensated with mle per (size, seed) unit, so n = sizes × seeds pairs; the sd of a
pair's difference is taken as √2 × the pooled seed sd (the two arms as if independent: pairing
by seed should shrink it). Printed per seed count: the power of S4's TOST on EE at ±0.02 and
at the registered margin (tables.EE_MARGIN) when the true difference is 0, and the smallest
log-confidence difference its paired t-test detects with 80% power (α = 0.05, two-sided);
`analysis.paired_power` computes both.
"""

from __future__ import annotations

import math
import sys

import polars as pl
from lr_choice import FAMILY
from tables import EE_MARGIN

from analysis.paired_power import minimal_detectable_effect, tost_power
from analysis.scaling import scaling
from analysis.scaling.gate import pooled_sd
from analysis.scaling.settings import ScalingSettings
from records.reader import open_store

SPLIT = "eval/test"
METRICS = ("ce", "error_entropy", "self_alignment", "log_confidence")
SIZES = len(FAMILY)
ALPHA = 0.05


def seed_sds(results: str, experiments: str) -> dict[str, float | None]:
    """The pooled seed sd of each metric at the chosen rates, from the gate's trials: every
    trial a point (--aggregate trial), the sd over each size's seeds, pooled over the sizes."""
    settings = ScalingSettings(
        metrics=tuple(f"{SPLIT}/{m}" for m in METRICS),
        axes=("N",),
        aggregate="trial",
        n_boot=10,
        pool_experiments=True,
        models=FAMILY,
    )
    result = scaling(open_store(results, experiments.split(",")), settings)
    points = next(t for t in result.tables if t.name == "scaling_points").data
    per_size = (
        points.filter(pl.col("loss") == "mle")
        .group_by("metric", "model")
        .agg(pl.col("mean").std().alias("sd"), pl.len().alias("seeds"))
        .sort("metric", "model")
    )
    return {
        m: pooled_sd(part["sd"].to_list(), part["seeds"].to_list())
        for (m,), part in per_size.group_by("metric", maintain_order=True)
    }


def main(results: str, experiments: str) -> None:
    sds = seed_sds(results, experiments)
    for metric, sd in sds.items():
        print(f"{metric}: pooled seed sd {sd:.4f}" if sd is not None else f"{metric}: no sd")
    ee, lc = sds[f"{SPLIT}/error_entropy"], sds[f"{SPLIT}/log_confidence"]
    print(f"seeds  pairs  TOST power EE ±0.02  ±{EE_MARGIN}  log C detectable (80%)")
    for seeds in (2, 3, 4, 5, 6):
        n = SIZES * seeds
        tost = [tost_power(m, math.sqrt(2) * ee, n, ALPHA) for m in (0.02, EE_MARGIN)]
        mde = minimal_detectable_effect(math.sqrt(2) * lc, n, ALPHA, 0.8)
        print(f"{seeds:5d}  {n:5d}  {tost[0]:19.3f}  {tost[1]:5.3f}  {mde:.4f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__ + "\nusage: plan.py RESULTS EXPERIMENTS (comma-separated)")
    main(sys.argv[1], sys.argv[2])
