"""The points of a fit over sizes and budgets, and how they are resampled: a cell is one (N, D)
configuration of a fit group (D = 1 for a fit against N alone), its units the rows behind it,
its value the mean over its units.

The bootstrap draws cells with replacement (the case bootstrap Besiroglu et al. (2024) used to
put intervals on Chinchilla's joint fit, where the scatter of the points about the law is the
uncertainty). Where the units of a cell are declared seeds (a store's trials, a table's
--seed-column) and a cell has several, each drawn cell's seeds are drawn again as well, so its
value varies as a rerun's would (two-stage: cells, then seeds within them). Rows that repeat a
cell without declared seeds are averaged into it and the cell is resampled as one point: they
are not known to be seeds (a column not declared may tell them apart; table_points.py names
it). Redrawing seeds alone, with the cells held fixed, treats the cells as exact; where a few
cells repeat that collapsed the intervals of a whole table to those cells' seed noise (the
data-constrained study's 62 runs: α [0.360, 0.365] against [0.242, 0.512] from its 39 cells).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

CELLS = "cells"
CELLS_AND_SEEDS = "cells and seeds"
"""The two resampling schemes (Cells.scheme)."""


@dataclass(frozen=True)
class Cells:
    """Cells sorted by (N, D): n (P,), d (P,), per cell the values of its units and their
    weights (None: 1 each); `seeded`: the units are declared seeds."""

    n: np.ndarray
    d: np.ndarray
    units: tuple[np.ndarray, ...]
    seeded: bool = False
    unit_weights: tuple[np.ndarray, ...] | None = None

    @staticmethod
    def of(
        n: np.ndarray,
        d: np.ndarray | None,
        values: np.ndarray,
        *,
        seeded: bool = False,
        weights: np.ndarray | None = None,
    ) -> Cells:
        """Group rows by their (N, D) (D absent: every row at D = 1); `seeded`: rows repeating
        a cell are its seeds (declared), else repeats are averaged (see the module docstring)."""
        n = np.asarray(n, dtype=np.float64)
        d = np.ones_like(n) if d is None else np.asarray(d, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        order = np.lexsort((v, d, n))  # canonical: the fits do not depend on the rows' order
        n, d, v = n[order], d[order], v[order]
        w = None if w is None else w[order]
        new = np.r_[True, (n[1:] != n[:-1]) | (d[1:] != d[:-1])]
        edges = np.r_[np.flatnonzero(new), n.size]
        units = tuple(v[a:b] for a, b in itertools.pairwise(edges))
        unit_w = None if w is None else tuple(w[a:b] for a, b in itertools.pairwise(edges))
        return Cells(n[new], d[new], units, seeded, unit_w)

    @property
    def size(self) -> int:
        return len(self.units)

    @property
    def repeated(self) -> int:
        """Cells with more than one unit."""
        return sum(u.size > 1 for u in self.units)

    @property
    def scheme(self) -> str:
        """CELLS_AND_SEEDS where the units are declared seeds and some cell has several, else
        CELLS."""
        return CELLS_AND_SEEDS if self.seeded and self.repeated else CELLS

    def means(self) -> np.ndarray:
        """The value of each cell: the (weighted) mean over its units, (P,)."""
        if self.unit_weights is None:
            return np.array([u.mean() for u in self.units])
        return np.array(
            [np.average(u, weights=w) for u, w in zip(self.units, self.unit_weights, strict=True)]
        )

    def weights(self) -> np.ndarray | None:
        """Each cell's weight in the fit: the sum of its rows' weights (None without weights)."""
        if self.unit_weights is None:
            return None
        return np.array([w.sum() for w in self.unit_weights])

    def subset(self, keep: np.ndarray) -> Cells:
        """The cells where the boolean mask `keep` (P,) holds."""
        idx = np.flatnonzero(keep)
        unit_w = None if self.unit_weights is None else tuple(self.unit_weights[i] for i in idx)
        return Cells(
            self.n[idx], self.d[idx], tuple(self.units[i] for i in idx), self.seeded, unit_w
        )

    def how(self, n_boot: int, seed: int) -> str:
        """How `draws` resamples, and why, in words for a table's header."""
        counts = [u.size for u in self.units]
        if self.scheme == CELLS_AND_SEEDS:
            many = [k for k in counts if k > 1]
            return (
                f"cells (N, D) drawn with replacement and each drawn cell's seeds redrawn "
                f"({self.size} cells, {len(many)} with {min(many)}–{max(many)} declared seeds), "
                f"{n_boot} resamples, seed {seed}"
            )
        why = ""
        if self.repeated:
            why = (
                f"; {self.repeated} cell(s) repeat with no seeds declared: their rows averaged "
                "into one point each (--seed-column declares seeds, redrawn within cells)"
            )
        return (
            f"cells (N, D) drawn with replacement ({self.size} cells{why}), "
            f"{n_boot} resamples, seed {seed}"
        )

    def draws(self, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The resamples as arrays: cell indices (B, P) and the drawn cells' values (B, P) (the
        mean of each drawn cell's redrawn seeds under CELLS_AND_SEEDS, else the cell's mean).
        The same (seed, cells) give the same draws, so groups of one design are paired."""
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, self.size, size=(n_boot, self.size))  # (B, P)
        if self.scheme == CELLS:
            return idx, self.means()[idx]
        counts = np.array([u.size for u in self.units])
        kmax = int(counts.max())
        padded = np.zeros((self.size, kmax))  # (P, kmax): each cell's units, zero-padded
        pad_w = np.zeros((self.size, kmax))
        for j, u in enumerate(self.units):
            padded[j, : u.size] = u
            pad_w[j, : u.size] = 1.0 if self.unit_weights is None else self.unit_weights[j]
        k = counts[idx]  # (B, P)
        slot = (rng.random((n_boot, self.size, kmax)) * k[..., None]).astype(int)  # (B, P, kmax)
        live = np.arange(kmax)[None, None, :] < k[..., None]
        vals = padded[idx[..., None], slot]
        wts = pad_w[idx[..., None], slot] * live
        return idx, np.sum(vals * wts, axis=-1) / np.sum(wts, axis=-1)
