"""Plain power laws of several groups (losses) on one line, fitted separately and with the exponent
shared — the nested pair of forms the comparison across scale tests (exponent_test.py) and turns
into compute multipliers (multipliers.py).

On log scale the plain law L = A·N^−b is the line y = c + a·x, y = ln L, x = ln N, a = −b,
c = ln A. Two groups g and r (the reference) fitted

- separately: their own (c_g, a_g) and (c_r, a_r), 4 parameters;
- with the exponent shared: their own intercepts and one slope a_s, 3 parameters. The least
  squares slope of the pair is a_s = (Sxy_g + Sxy_r) / (Sxx_g + Sxx_r) (Sxx, Sxy the centred
  sums of squares and products within each group) and each intercept c = ȳ − a_s·x̄ of its own
  group: the pooled within-group slope of an analysis of covariance.

Every fit here is of the cell means (one point per size N, the mean over its seeds or repeated
rows; cells.py), fitted for the full data and for every bootstrap resample at once: the
moments below are per row of (B, P) arrays, one row a resample. The resamples are those of
`Cells.draws` (cells, and seeds within cells where declared), drawn with the same seed for every
group, so that groups of one design (the same sizes and seeds) draw the same cells and seeds.

Which interval a comparison reports follows the plain fit's own rule (powerlaw.py): from
MIN_BOOTSTRAP_POINTS cells in each group the bootstrap's percentiles, below that the t-interval
of the least-squares fit (`ci_method`). Resampling 4–9 sizes draws lines through two or three of
them, and the percentile intervals come out too narrow: 82% coverage of the multiplier at 6 sizes
and 95% nominal, where the t-interval held 94%; at 12 to 48 sizes 90–94% against 94–96% (200
simulated tables each, one seed per size, Gaussian noise in log L; docs/analysis-scaling.md).
Both intervals are in every record.

Where the pair is a paired design (the same seeds at the same sizes under both groups:
`paired_design` in paired_trend.py), the t-intervals take the two groups' cell means at one size
as correlated (`paired_covariance`): a seed's data order and start, and a size's own quirks, move
both losses alike, and an interval that takes them as independent counts that shared noise twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.scaling.cells import Cells
from analysis.scaling.powerlaw import MIN_BOOTSTRAP_POINTS, MIN_SIZES, distinct_per_row
from analysis.seed_stats import t_quantile


@dataclass(frozen=True)
class Moments:
    """The least-squares moments of one line per row: x̄, ȳ, Sxx, Sxy, Syy, each (B,)."""

    xm: np.ndarray
    ym: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray
    syy: np.ndarray

    @staticmethod
    def of(x: np.ndarray, y: np.ndarray) -> Moments:
        """The moments of the rows of x, y (B, P) (a 1-d pair is one row)."""
        x, y = np.atleast_2d(x), np.atleast_2d(y)
        xm, ym = x.mean(axis=1), y.mean(axis=1)  # (B,)
        xc, yc = x - xm[:, None], y - ym[:, None]  # (B, P)
        return Moments(
            xm, ym, np.sum(xc * xc, axis=1), np.sum(xc * yc, axis=1), np.sum(yc * yc, axis=1)
        )

    def slope(self) -> np.ndarray:
        """The row's own least-squares slope a = Sxy / Sxx, (B,)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.sxy / self.sxx

    def intercept(self, a: np.ndarray) -> np.ndarray:
        """The least-squares intercept for slope `a` (B,): c = ȳ − a·x̄."""
        return self.ym - a * self.xm

    def sse(self, a: np.ndarray) -> np.ndarray:
        """Residual sum of squares of the best line with slope `a`: Syy − 2a·Sxy + a²·Sxx."""
        return np.maximum(self.syy - 2 * a * self.sxy + a * a * self.sxx, 0.0)


def shared_slope(g: Moments, r: Moments) -> np.ndarray:
    """The least-squares slope the two groups' lines share: (Sxy_g + Sxy_r) / (Sxx_g + Sxx_r)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (g.sxy + r.sxy) / (g.sxx + r.sxx)


@dataclass(frozen=True)
class GroupLine:
    """One group's points on a line: its cells (sizes N with their units), and its name."""

    name: str
    cells: Cells

    @property
    def x(self) -> np.ndarray:
        """ln N of each cell, (P,)."""
        return np.log(self.cells.n)

    @property
    def y(self) -> np.ndarray:
        """ln of each cell's mean, (P,)."""
        return np.log(self.cells.means())

    @property
    def sizes(self) -> int:
        return self.cells.size

    def moments(self) -> Moments:
        """The moments of the full data's line (one row)."""
        return Moments.of(self.x, self.y)

    def resamples(self, n_boot: int, seed: int) -> tuple[Moments, np.ndarray]:
        """The moments of every resample (B rows) and which resamples can fit a line (B,): at
        least MIN_SIZES distinct sizes and a positive mean in every drawn cell."""
        idx, values = self.cells.draws(n_boot, seed)  # (B, P) each
        x = self.x[idx]
        ok = (distinct_per_row(x) >= MIN_SIZES) & np.all(values > 0, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log(np.where(values > 0, values, 1.0))
        return Moments.of(x, y), ok

    def band(
        self, ln_n: np.ndarray, n_boot: int, seed: int, level: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The band of the fitted law at ln N values `ln_n`: from MIN_BOOTSTRAP_POINTS cells the
        bootstrap's percentiles, below that the t-band of the least-squares line,
        exp(ŷ ± t_{P−2}·s·√(1/P + (x − x̄)²/Sxx)); None without either."""
        if self.sizes >= MIN_BOOTSTRAP_POINTS:
            boot, ok = self.resamples(n_boot, seed)
            if not ok.any():
                return None
            a = boot.slope()[ok]
            fits = boot.intercept(boot.slope())[ok][:, None] + a[:, None] * ln_n[None, :]
            low, high = np.quantile(fits, [(1 - level) / 2, (1 + level) / 2], axis=0)
            return np.exp(low), np.exp(high)
        if self.sizes < MIN_SIZES:
            return None
        m = self.moments()
        a = m.slope()
        s2 = float(m.sse(a)[0]) / (self.sizes - 2)
        se = np.sqrt(s2 * (1 / self.sizes + (ln_n - m.xm[0]) ** 2 / m.sxx[0]))
        half = t_quantile((1 + level) / 2, self.sizes - 2) * se
        mid = m.intercept(a)[0] + a[0] * ln_n
        return np.exp(mid - half), np.exp(mid + half)

    def fitted(self, ln_n: np.ndarray) -> np.ndarray:
        """The plain law's fitted L at ln N values `ln_n` (the full data's own line)."""
        m = self.moments()
        a = m.slope()[0]
        return np.exp(m.intercept(np.array([a]))[0] + a * ln_n)


def interval_method(g: GroupLine, r: GroupLine, paired: bool = False) -> str:
    """ "bootstrap" where both groups have MIN_BOOTSTRAP_POINTS cells or more, else "t" ("t,
    paired" for a paired design: `paired_covariance`)."""
    if min(g.sizes, r.sizes) >= MIN_BOOTSTRAP_POINTS:
        return "bootstrap"
    return "t, paired" if paired else "t"


def design(g: GroupLine, r: GroupLine, shared: bool) -> tuple[np.ndarray, np.ndarray]:
    """The least-squares design of the pair's cell means and their ln L: columns (c_g, a_g, c_r,
    a_r) with exponents per group, (c_g, c_r, a) with one shared; (P, 4 or 3) and (P,)."""
    zg, zr = np.zeros(g.sizes), np.zeros(r.sizes)
    if shared:
        cols = [np.r_[zg + 1, zr], np.r_[zg, zr + 1], np.r_[g.x, r.x]]
    else:
        cols = [np.r_[zg + 1, zr], np.r_[g.x, zr], np.r_[zg, zr + 1], np.r_[zg, r.x]]
    return np.stack(cols, axis=1), np.r_[g.y, r.y]


def ols_covariance(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Least squares of y on the columns of x: coefficients, their covariance s²·(XᵀX)⁻¹ and the
    residual degrees of freedom (the covariance is nan without one)."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    dof = x.shape[0] - x.shape[1]
    resid = y - x @ beta
    s2 = float(resid @ resid) / dof if dof > 0 else np.nan
    return beta, s2 * np.linalg.inv(x.T @ x), dof


def paired_covariance(
    g: GroupLine, r: GroupLine, shared: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """Least squares of the pair's design (`design`) with the covariance of paired cells: the
    residuals of g and r at the same size correlated, Σ = [[σ_g², σ_gr], [σ_gr, σ_r²]] estimated
    from the residual pairs over P − 2 degrees of freedom (P sizes; the difference line's), and
    the sandwich (XᵀX)⁻¹·Xᵀ(Σ ⊗ I_P)X·(XᵀX)⁻¹. With exponents per group (the same sizes, so the
    same regressors) it is the seemingly-unrelated-regressions covariance: Var(β_g) =
    σ_g²·(X₀ᵀX₀)⁻¹, Cov(β_g, β_r) = σ_gr·(X₀ᵀX₀)⁻¹; the variance of the difference line is then
    (σ_g² + σ_r² − 2σ_gr)·(X₀ᵀX₀)⁻¹, the paired trend's. Coefficients, covariance, dof (nan
    covariance without a degree of freedom)."""
    if not np.array_equal(g.cells.n, r.cells.n):
        raise ValueError(f"{g.name} and {r.name} are not at the same sizes: no pairs")
    x, y = design(g, r, shared)  # (2P, k), (2P,): g's cells, then r's, each in N order
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    sizes = g.sizes
    dof = sizes - 2
    e = (y - x @ beta).reshape(2, sizes)  # (2, P): row 0 g's residuals, row 1 r's
    sigma = e @ e.T / dof if dof > 0 else np.full((2, 2), np.nan)  # (2, 2)
    bread = np.linalg.inv(x.T @ x)  # (k, k)
    meat = x.T @ np.kron(sigma, np.eye(sizes)) @ x  # (k, k)
    return beta, bread @ meat @ bread, dof


def pair_covariance(
    g: GroupLine, r: GroupLine, shared: bool, paired: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """The least-squares fit of the pair and its covariance: paired (`paired_covariance`) for a
    paired design, else the groups independent with one residual variance (`ols_covariance`)."""
    if paired:
        return paired_covariance(g, r, shared)
    return ols_covariance(*design(g, r, shared))
