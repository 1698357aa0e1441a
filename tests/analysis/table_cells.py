"""Expected table cells for the hand-written 3-trial store (tests/analysis_fixtures.py): a
two-seed cell is mean ± t(1)·sd/√2, derived by arithmetic."""

from __future__ import annotations

import math

# The t quantile at 0.975 with 1 degree of freedom (two seeds): t(1) is the Cauchy distribution,
# whose quantile is tan(π(p − 1/2)).
T1 = math.tan(math.pi * (0.975 - 0.5))


def pm2(a: float, b: float) -> str:
    """The cell for seeds a and b: mean ± t(1)·sd/√2, where sd/√2 = |a − b| / 2."""
    return f"{(a + b) / 2:.4g} ± {T1 * abs(a - b) / 2:.2g}"


def md_rows(markdown: str) -> list[list[str]]:
    """A Markdown table's body rows as lists of cell texts."""
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in markdown.splitlines()[2:]]
