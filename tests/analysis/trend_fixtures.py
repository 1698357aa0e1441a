"""A results store for a trend study (analysis/sequential/trend.py), every value spelled out:
MLE and DEL at three model sizes of one and two decades apart, N = 10³, 10⁴, 10⁵ non-embedding
parameters (log10 N = 3, 4, 5), on seeds 0..5, and seed 6 with DEL missing at the largest size.

At x = log10 N = 3, 4, 5 the least-squares slope of a seed's differences d is
Σ(x − 4)·d / Σ(x − 4)² = (d₅ − d₃) / 2: the middle size does not move it. So each seed's slope
per decade below is (last − first) / 2 of its differences DEL − MLE in eval/test/ce.
"""

from __future__ import annotations

import math
from pathlib import Path

from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from tests.analysis_fixtures import at

CE = "eval/test/ce"
SIZES = (("h16l1", 1e3, 3e-2), ("tiny", 1e4, 1e-2), ("xs", 1e5, 3e-3))
"""(preset, non-embedding parameters, learning rate): each size's own rate, as study 4 chose."""
DIFFS = {
    0: (0.060, 0.020, 0.000),  # (0.000 − 0.060) / 2 = −0.030
    1: (0.050, 0.030, -0.010),  # (−0.010 − 0.050) / 2 = −0.030
    2: (0.070, 0.010, 0.006),  # (0.006 − 0.070) / 2 = −0.032
    3: (0.040, 0.035, -0.016),  # (−0.016 − 0.040) / 2 = −0.028
    4: (0.062, 0.015, 0.000),  # (0.000 − 0.062) / 2 = −0.031
    5: (0.058, 0.040, 0.000),  # (0.000 − 0.058) / 2 = −0.029
}
"""Per seed, DEL − MLE at the three sizes, smallest first."""
SLOPES = [-0.030, -0.030, -0.032, -0.028, -0.031, -0.029]
"""The seeds' slopes per decade of N, derived by hand above: DEL's CE falls against MLE's by
0.03 nat for each tenfold N, so its advantage grows with N."""
LATE = 6
"""A seed whose DEL trial at the largest size did not finish: no slope until it has."""


def _mle_ce(x: float) -> float:
    """MLE's CE at log10 N = x: lower for larger models (its value does not reach a slope)."""
    return 4.0 - 0.3 * x


def write_trend_store(
    root: Path, experiment: str = "trend", sizes=SIZES, *, counts: bool = True
) -> None:
    """The store above; every trial reports its N at step 0 (none with `counts` False) and its
    cost (wall_s 100·(k + 1), k its index in writing order); trials start in seed order, mle
    before del."""
    rows, states, k = [], [], 0
    for seed in [*DIFFS, LATE]:
        for loss in ("mle", "del"):
            for i, (preset, n, lr) in enumerate(sizes):
                if seed == LATE and loss == "del" and i == len(sizes) - 1:
                    continue
                x = math.log10(n)
                diff = 0.0 if loss == "mle" else DIFFS.get(seed, (0.01,) * len(sizes))[i]
                trial = f"{loss}_{preset}_s{seed}"
                if counts:
                    rows.append((trial, 0, 0, "model/params_non_embedding", n, at(k)))
                rows += [
                    (trial, 0, 100, CE, _mle_ce(x) + diff, at(k)),
                    (trial, 0, 100, "perf/wall_s", 100.0 * (k + 1), at(k)),
                    (trial, 0, 100, "perf/cpu_s", 200.0 * (k + 1), at(k)),
                ]
                config = trial_config(loss=loss, seed=seed, lr=lr, model=preset)
                states.append(
                    trial_row(trial, "TERMINATED", config, start=at(10 * k), end=at(10 * k + 5))
                )
                k += 1
    write_metric_rows(root, experiment, rows)
    write_trial_states(root, experiment, states)
