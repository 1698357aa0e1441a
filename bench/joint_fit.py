"""How long the joint L(N, D) fit's bootstrap takes, and how many resamples fail:

    python -m bench.joint_fit [--resamples 1000] [--table FILE]

Fits the table (default: the tests' 240 points drawn like Chinchilla's approach 3, see
tests/analysis/scaling/synthetic_tables.py) once from the grid of 18 starts, then refits every
resample from the optimum (analysis/scaling/joint.py), and runs the whole
`analysis scaling --points` command; prints the wall times, the time per refit, the failed
resamples and the load average. Numbers for bench/README.md, never asserted.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import polars as pl

from analysis.scaling.cells import Cells
from analysis.scaling.from_table import scaling_points
from analysis.scaling.huber import fit_joint
from analysis.scaling.joint import bootstrap_joint

TABLE = Path(__file__).resolve().parents[1] / "tests/analysis/scaling/data/chinchilla_like.csv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    t = pl.read_csv(args.table)
    cells = Cells.of(t["N"].to_numpy(), t["D"].to_numpy(), t["loss"].to_numpy())
    start = time.perf_counter()
    fit = fit_joint(cells.n, cells.d, cells.means())
    grid = time.perf_counter() - start
    start = time.perf_counter()
    boot = bootstrap_joint(cells, n_boot=args.resamples, seed=0)
    total = time.perf_counter() - start
    refits = total - grid  # bootstrap_joint fits the grid once more before its resamples
    print(f"table: {args.table.name}, {cells.size} points; load average {os.getloadavg()[0]:.2f}")
    print(f"grid fit (18 starts): {grid:.2f} s; E {fit.E:.4g}, α {fit.alpha:.4g}, β {fit.beta:.4g}")
    print(
        f"bootstrap, {args.resamples} resamples: {total:.1f} s "
        f"({1000 * refits / args.resamples:.1f} ms a refit), {boot.failed} failed "
        "(no convergence or too few distinct N, D)"
    )
    start = time.perf_counter()
    scaling_points(args.table, n_boot_fit=args.resamples)
    print(
        f"`analysis scaling --points` (every fit, the held-out checks), {args.resamples} "
        f"resamples: {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
