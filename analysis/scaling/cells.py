"""The points of a fit over sizes and budgets, and how they are resampled: a cell is one (N, D)
configuration of a fit group (D = 1 for a fit against N alone), its units the rows behind it
(seeds; one per cell in most published tables), its value the mean over its units.

Without seeds (one unit per cell, as in most published tables) the bootstrap draws cells with
replacement: the case bootstrap Besiroglu et al. (2024) used to put intervals on Chinchilla's
joint fit, where the scatter of the points about the law is the uncertainty. With seeds it
resamples (size, seed) units as the per-line fits do (bootstrap.unit_draws): every cell kept,
its units drawn again with replacement, its value the mean of the drawn units — the cells are
then a design, and what varies between runs of it is the seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cells:
    """Cells sorted by (N, D): n (P,), d (P,), and per cell the values of its units."""

    n: np.ndarray
    d: np.ndarray
    units: tuple[np.ndarray, ...]

    @staticmethod
    def of(n: np.ndarray, d: np.ndarray | None, values: np.ndarray) -> Cells:
        """Group rows by their (N, D) (D absent: every row at D = 1)."""
        n = np.asarray(n, dtype=np.float64)
        d = np.ones_like(n) if d is None else np.asarray(d, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        order = np.lexsort((v, d, n))  # canonical: the fits do not depend on the rows' order
        n, d, v = n[order], d[order], v[order]
        new = np.r_[True, (n[1:] != n[:-1]) | (d[1:] != d[:-1])]
        edges = np.r_[np.flatnonzero(new), n.size]
        units = tuple(v[a:b] for a, b in itertools.pairwise(edges))
        return Cells(n[new], d[new], units)

    @property
    def size(self) -> int:
        return len(self.units)

    @property
    def seeded(self) -> bool:
        """Whether some cell has more than one unit (the bootstrap then redraws seeds)."""
        return any(u.size > 1 for u in self.units)

    def means(self) -> np.ndarray:
        """The value of each cell: the mean over its units, (P,)."""
        return np.array([u.mean() for u in self.units])

    def subset(self, keep: np.ndarray) -> Cells:
        """The cells where the boolean mask `keep` (P,) holds."""
        idx = np.flatnonzero(keep)
        return Cells(self.n[idx], self.d[idx], tuple(self.units[i] for i in idx))

    def how(self, n_boot: int, seed: int) -> str:
        """How `resamples` draws, in words, for a table's header."""
        kind = "each cell's seeds" if self.seeded else "points"
        return f"{kind} drawn with replacement, {n_boot} resamples, seed {seed}"

    def resamples(
        self, n_boot: int, seed: int
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(n, d, values) of each resample, P cells each (repeats allowed without seeds)."""
        rng = np.random.default_rng(seed)
        means = self.means()
        for _ in range(n_boot):
            if self.seeded:
                values = np.array(
                    [u[rng.integers(0, u.size, size=u.size)].mean() for u in self.units]
                )
                yield self.n, self.d, values
            else:
                idx = rng.integers(0, self.size, size=self.size)  # (P,)
                yield self.n[idx], self.d[idx], means[idx]
