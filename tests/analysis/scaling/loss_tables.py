"""Synthetic tables of several losses across scale with known exponents and multipliers, for the
tests of losses compared across scale and the worked example of docs/analysis-scaling.md
(`python -m tests.analysis.scaling.loss_tables FILE` writes the default table).
Written with numpy alone, independent of analysis/scaling.

Each loss follows a plain law L = A·N^−b; the reference `mle` has A = 10, b = 0.2. A seed's noise
is mostly shared by the losses at its size (same data order and start: paired seeds), the rest
its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

LAWS = {"mle": (10.0, 0.2), "del": (9.0, 0.2), "steep": (12.0, 0.22)}
"""(A, b) of each loss. `del` shares mle's exponent: its multiplier is (9/10)^(−1/0.2) =
(10/9)^5 at every N. `steep` has a larger exponent: m(N) = (10/12)^5 · N^0.1 (multipliers.py)."""
SIZES = tuple(float(n) for n in np.geomspace(1e7, 1e10, 6))


def loss_table(
    seeds: int = 4,
    shared: float = 0.01,
    own: float = 0.003,
    seed: int = 1,
    laws: dict[str, tuple[float, float]] = LAWS,
) -> dict[str, list]:
    """Rows (N, seed, loss name, loss): per (size, seed) a log-normal factor e^ε shared by every
    loss (ε ~ Normal(0, `shared`)) times each loss's own e^η (η ~ Normal(0, `own`))."""
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {"N": [], "seed": [], "loss_name": [], "loss": []}
    for n in SIZES:
        for s in range(seeds):
            common = rng.normal(0.0, shared)
            for name, (a, b) in laws.items():
                out["N"].append(n)
                out["seed"].append(s)
                out["loss_name"].append(name)
                out["loss"].append(a * n**-b * np.exp(common + rng.normal(0.0, own)))
    return out


def write_csv(path: Path, table: dict[str, list]) -> Path:
    """The table as CSV, the loss to 8 significant digits."""
    lines = ["N,seed,loss_name,loss"] + [
        f"{n:.6g},{s},{g},{v:.8g}"
        for n, s, g, v in zip(
            table["N"], table["seed"], table["loss_name"], table["loss"], strict=True
        )
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    import sys

    write_csv(Path(sys.argv[1] if len(sys.argv) > 1 else "losses.csv"), loss_table())
