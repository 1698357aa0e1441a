"""Which of two metrics of the same trials follows a power law better — CE or its error-entropy
part EE, the question of "What Scales in Cross-Entropy Scaling Law?" — with uncertainty: the
difference of the plain power law's R² (EE − CE), with a bootstrap interval over seeds.

The bootstrap resamples trials within each size (the sizes stay as designed; the seeds are the
random part), paired: one draw of trials serves both metrics. With one trial per size there is
no seed variation to resample; then the sizes themselves are resampled when there are at least
MIN_BOOTSTRAP_POINTS of them (each resample keeping three distinct sizes), and below that there
is no interval.

The same stratified resampling of (size, seed) units serves the robust fit's intervals and the
paired comparison of prediction errors (`unit_draws`, `resampled_points`, `percentile_ci`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.scaling.powerlaw import MIN_BOOTSTRAP_POINTS, MIN_SIZES, distinct_per_row


@dataclass(frozen=True)
class R2Difference:
    """R²(second) − R²(first) of log-log lines, its bootstrap interval and how it was drawn."""

    delta: float
    ci: tuple[float, float] | None
    how: str
    n_boot: int


def _row_r2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """R² of the least-squares line of y on x per row, x and y of shape (B, n); returns (B,)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sum(xc * yc, axis=1) ** 2 / (np.sum(xc * xc, axis=1) * np.sum(yc * yc, axis=1))


def _log_points(arrs: Sequence[np.ndarray], per_size_means: bool) -> np.ndarray:
    """log of the per-size means (S,) or of every trial's value (total,), as one row (1, P)."""
    if per_size_means:
        return np.log(np.array([v.mean() for v in arrs]))[None, :]
    return np.log(np.concatenate(arrs))[None, :]


def _resampled(arrs: Sequence[np.ndarray], draws: Sequence[np.ndarray], per_size_means: bool):
    """log points of every resample (B, P): per size, the drawn trials' mean or the trials."""
    if per_size_means:
        return np.log(np.stack([v[d].mean(axis=1) for v, d in zip(arrs, draws, strict=True)], 1))
    return np.log(np.concatenate([v[d] for v, d in zip(arrs, draws, strict=True)], axis=1))


def r2_difference(
    x: Sequence[np.ndarray],
    first: Sequence[np.ndarray],
    second: Sequence[np.ndarray],
    *,
    per_size_means: bool,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> R2Difference | None:
    """R²(second) − R²(first) of log M on log x, per size stratum s: x[s], first[s], second[s]
    are the trials' values (paired, same order). None when a metric is not positive."""
    if any(np.any(v <= 0) for arrs in (x, first, second) for v in arrs):
        return None
    px, pa, pb = (_log_points(arrs, per_size_means) for arrs in (x, first, second))
    delta = float(_row_r2(px, pb)[0] - _row_r2(px, pa)[0])
    rng = np.random.default_rng(seed)
    sizes = [v.size for v in x]
    if max(sizes) >= 2:
        # Trials within each size, the same draw for both metrics.
        draws = [rng.integers(0, k, size=(n_boot, k)) for k in sizes]  # (B, k_s) each
        bx, ba, bb = (_resampled(arrs, draws, per_size_means) for arrs in (x, first, second))
        ok = np.ones(n_boot, dtype=bool)
        how = f"trials resampled within each size, {n_boot} resamples, seed {seed}"
    elif len(sizes) >= MIN_BOOTSTRAP_POINTS:
        idx = rng.integers(0, len(sizes), size=(n_boot, len(sizes)))  # (B, S)
        bx, ba, bb = px[0][idx], pa[0][idx], pb[0][idx]
        ok = distinct_per_row(bx) >= MIN_SIZES
        how = f"one trial per size: sizes resampled, {n_boot} resamples, seed {seed}"
    else:
        why = f"no interval: one trial per size and fewer than {MIN_BOOTSTRAP_POINTS} sizes"
        return R2Difference(delta, None, why, 0)
    diffs = (_row_r2(bx, bb) - _row_r2(bx, ba))[ok]
    diffs = diffs[np.isfinite(diffs)]
    if diffs.size == 0:
        return R2Difference(delta, None, "no interval: no usable resample", 0)
    lo, hi = np.quantile(diffs, [(1 - level) / 2, (1 + level) / 2])
    return R2Difference(delta, (float(lo), float(hi)), how, int(diffs.size))


def unit_draws(counts: Sequence[int], n_boot: int, seed: int) -> np.ndarray | None:
    """Bootstrap draws of (size, seed) units, stratified by size: the units are numbered size by
    size (`counts[s]` units of size s, in order), and each resample draws, for every size, as
    many units as it has, with replacement, from that size's own units. Every resample so keeps
    every size (the design: leave-one-size-out and the largest size stay defined) and varies
    what the seeds vary. Returns the unit indices, (n_boot, Σ counts), a size's draws in its
    own block of columns; None when every size has one unit (nothing to resample)."""
    if max(counts, default=0) < 2:
        return None
    rng = np.random.default_rng(seed)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
    blocks = [s + rng.integers(0, k, size=(n_boot, k)) for s, k in zip(starts, counts, strict=True)]
    return np.concatenate(blocks, axis=1)


def resampled_points(
    x: np.ndarray, values: np.ndarray, counts: Sequence[int], draws: np.ndarray, means: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The points of every resample from unit draws (`unit_draws`): per size the mean of its
    drawn units, (B, S) with the sizes' x (S,) — or every drawn unit, (B, U) with x (B, U)."""
    if not means:
        return x[draws], values[draws]
    edges = np.concatenate([[0], np.cumsum(counts)]).astype(int)
    drawn = values[draws]  # (B, U)
    per_size = np.stack([drawn[:, a:b].mean(axis=1) for a, b in itertools.pairwise(edges)], 1)
    return np.array([x[a] for a in edges[:-1]]), per_size


def percentile_ci(samples: np.ndarray, level: float) -> tuple[float, float] | None:
    """The percentile interval of the finite bootstrap samples; None without any."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    lo, hi = np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
