"""How long the joint L(N, D) fit and its bootstrap take on tables of 40, 100 and 600 points and
on the two published tables of tests/analysis/scaling/data, and what became of the resamples:

    python -m bench.scaling_speed [--resamples 1000] [--tables syn40,syn100,...]

The same script runs against another checkout (PYTHONPATH=/path/to/that/checkout) to put the
before and after side by side: it uses only Cells.of and bootstrap_joint(cells, n_boot=, seed=),
which both keep. syn40/syn100/syn600 are isoflop_table(rows) of
tests/analysis/scaling/synthetic_tables.py (Chinchilla's refit with 1% noise); datablations is
the data-constrained study's 62-run fit set (one point per (N, D) cell: its repeated cells'
seeds averaged), gadre the over-training study's 95 C4/RedPajama/RefinedWeb runs without the
held-out 1.4B/6.9B ones, the C4 setting. Prints one line per table; numbers for bench/README.md,
never asserted.

    python -m bench.scaling_speed --whole /path/to/before,/path/to/after [--rounds 1]

times the whole `python -m analysis scaling --points` command on the over-training table's 95
runs in three groups (WHOLE_ARGS, --resamples as its --fit-bootstrap) under each checkout in
turn (PYTHONPATH set to it), round after round: wall seconds, and the CPU seconds (user + sys)
the command used, which a shared machine's load stretches far less than the wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from analysis.scaling.cells import Cells
from analysis.scaling.joint import bootstrap_joint
from tests.analysis.scaling.synthetic_tables import isoflop_table

DATA = Path(__file__).resolve().parents[1] / "tests/analysis/scaling/data"


def table(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, D, loss) of one named table (module docstring)."""
    if name.startswith("syn"):
        t = isoflop_table(rows=int(name[3:]), seed=7)
        return t["N"], t["D"], t["loss"]
    if name == "datablations":
        t = pl.read_csv(DATA / "datablations_c4.csv").filter(pl.col("fit_set") == 1)
    elif name == "gadre":
        t = pl.read_csv(DATA / "gadre_overtraining.csv").filter(
            (pl.col("held_out") == 0) & (pl.col("dataset") == "c4")
        )
    else:
        raise SystemExit(f"unknown table {name!r}")
    return (t[c].to_numpy().astype(np.float64) for c in ("N", "D", "loss"))  # type: ignore[return-value]


WHOLE_ARGS = (
    *("scaling", "--points", str(DATA / "gadre_overtraining.csv")),
    *("--where", "held_out=0", "--group", "dataset", "--tie-exponents"),
)
"""The over-training study's fit (its held-out runs left out, one fit per dataset, α = β)."""


def whole(checkouts: list[str], rounds: int, resamples: int) -> None:
    """Wall and CPU seconds of the whole command under each checkout, interleaved (module
    docstring)."""
    for r in range(rounds):
        for path in checkouts:
            load = os.getloadavg()[0]
            env = {**os.environ, "PYTHONPATH": path}
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "analysis", *WHOLE_ARGS, "--fit-bootstrap", str(resamples)],
                env=env,
                cwd=path,
                capture_output=True,
                text=True,
                check=False,
            )
            took = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime
            print(
                f"round {r + 1} {path}, {resamples} resamples: {took:.1f} s wall, {cpu:.1f} s "
                f"CPU (exit {done.returncode}), load average before {load:.2f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--tables", default="syn40,syn100,syn600,datablations,gadre")
    parser.add_argument("--whole", default=None, help="checkouts to time the whole command in")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    if args.whole:
        whole(args.whole.split(","), args.rounds, args.resamples)
        return
    print(f"load average {os.getloadavg()[0]:.2f}; {args.resamples} resamples")
    for name in args.tables.split(","):
        n, d, v = table(name)
        cells = Cells.of(n, d, v)
        start = time.perf_counter()
        boot = bootstrap_joint(cells, n_boot=args.resamples, seed=0)
        took = time.perf_counter() - start
        f = boot.fit
        extra = ", ".join(
            f"{k} {getattr(boot, k)}"
            for k in ("degenerate", "not_converged", "rescued")
            if hasattr(boot, k)
        )
        print(
            f"{name}: {cells.size} cells, {took:.1f} s ({1000 * took / args.resamples:.1f} ms a "
            f"resample); fit E {f.E:.4g} α {f.alpha:.4g} β {f.beta:.4g} converged "
            f"{getattr(f, 'converged', '?')}; left out {boot.failed}"
            + (f"; {extra}" if extra else "")
        )


if __name__ == "__main__":
    main()
