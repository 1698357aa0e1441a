"""Synthetic (N, D, loss) tables with known parameters, for the scaling fits' tests and the worked
example of docs/analysis-scaling.md: points drawn like Chinchilla's approach 3 (Hoffmann et al.
2022; Besiroglu et al. 2024's 240 points): model sizes along IsoFLOP budgets, a loss from
L = E + A·N^−α + B·D^−β (the replication's refit: E 1.82, A 482, α 0.3478, B 2085, β 0.3658)
times log-normal noise. Written here with numpy alone, independent of analysis/scaling.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

TRUTH = {"E": 1.82, "A": 482.01, "alpha": 0.3478, "B": 2085.43, "beta": 0.3658}
"""Epoch AI's refit of Chinchilla's joint law (Besiroglu et al. 2024, Table 1)."""
BUDGETS = (6e18, 1e19, 3e19, 6e19, 1e20, 3e20, 6e20, 1e21, 3e21, 1e22)
CHINCHILLA_LIKE = Path(__file__).parent / "data" / "chinchilla_like.csv"
"""The committed 240-row table (`python -m tests.analysis.scaling.synthetic_tables` writes it)."""


def law(n: np.ndarray, d: np.ndarray, p: dict[str, float] = TRUTH) -> np.ndarray:
    """L(N, D) of the joint form with parameters `p`."""
    return p["E"] + p["A"] * n ** -p["alpha"] + p["B"] * d ** -p["beta"]


def isoflop_table(
    rows: int = 240, noise: float = 0.01, seed: int = 2024, p: dict[str, float] = TRUTH
) -> dict[str, np.ndarray]:
    """`rows` points: each budget C gets rows/len(BUDGETS) sizes log-spaced around its
    compute-optimal N (a factor 10 either side), jittered, D = C / (6N); loss = L·e^ε,
    ε ~ Normal(0, noise)."""
    rng = np.random.default_rng(seed)
    per = rows // len(BUDGETS)
    n_all, d_all = [], []
    for c in BUDGETS:
        g = (p["alpha"] * p["A"] / (p["beta"] * p["B"])) ** (1 / (p["alpha"] + p["beta"]))
        n_opt = g * (c / 6) ** (p["beta"] / (p["alpha"] + p["beta"]))
        n = n_opt * np.geomspace(0.1, 10, per) * np.exp(rng.normal(0, 0.05, per))
        n_all.append(n)
        d_all.append(c / (6 * n))
    n, d = np.concatenate(n_all), np.concatenate(d_all)
    loss = law(n, d, p) * np.exp(rng.normal(0, noise, n.size))
    return {"N": np.round(n), "D": np.round(d), "loss": loss}


def write_csv(path: Path, table: dict[str, np.ndarray]) -> None:
    """The table as CSV: N and D as integers, loss to 6 decimals."""
    lines = ["N,D,loss"] + [
        f"{int(n)},{int(d)},{v:.6f}"
        for n, d, v in zip(table["N"], table["D"], table["loss"], strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write_csv(CHINCHILLA_LIKE, isoflop_table())
