"""PNG figures for the report, drawn with matplotlib's Agg backend (no display needed): curves
over training per arm (with CI bands), log-log scaling plots with both fitted forms, EE's share
of CE against size, and the Pareto plot."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window, also on machines without a display

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker

from analysis.arm_curves import Curve

MAX_LEGEND = 12
"""More arms than this get no legend (it would cover the plot); the caption says so."""
DPI = 110


def _colors(n: int) -> list[Any]:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


def first_step_dwarfs(curves: Sequence[Curve]) -> bool:
    """Whether the first evaluation step's values lie so far from the rest that drawing them would
    flatten every later difference: farther from the later values' median than three times the
    later values' whole range (CE at step 0, before any training, is the case in point)."""
    firsts, rest = [], []
    for c in curves:
        if c.steps.size >= 3 and c.steps[0] == 0:
            firsts.append(c.mean[0])
            rest.append(c.mean[1:])
    if not firsts:
        return False
    later = np.concatenate(rest)
    later = later[np.isfinite(later)]
    if later.size == 0:
        return False
    span = float(np.ptp(later))
    gap = float(np.max(np.abs(np.asarray(firsts) - np.median(later))))
    return gap > 3.0 * span


def plot_curves(
    curves: dict[str, dict[str, Curve]],
    metrics: Sequence[str],
    order: Sequence[str],
    path: Path,
    title: str,
    family: Mapping[str, str] | None = None,
) -> Path:
    """One panel per metric, one line per arm (mean over seeds) with its CI band where n ≥ 2.

    With more than MAX_LEGEND arms the bands are left out (they would bury each other) and the
    lines are coloured by `family` (arm -> e.g. its loss), with one legend entry per family.
    """
    metrics = [m for m in metrics if m in curves]
    if not metrics:
        raise ValueError("plot_curves: none of the metrics has data")
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(5.2 * len(metrics), 3.8), squeeze=False, constrained_layout=True
    )
    arms = [a for a in order if any(a in curves[m] for m in metrics)]
    many = len(arms) > MAX_LEGEND
    colors, labels = _arm_colors(arms, family if many else None)
    for ax, metric in zip(axes[0], metrics, strict=True):
        _curve_panel(ax, curves[metric], arms, colors, labels, many)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    handles, names = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(names, handles, strict=True))  # one entry per family when many arms
    if len(unique) <= MAX_LEGEND:
        # Outside the panels: curves of many arms leave no empty corner inside them.
        fig.legend(list(unique.values()), list(unique), loc="outside right upper", fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _arm_colors(
    arms: Sequence[str], family: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each arm's line colour and legend label: its own, or its family's when `family` is given
    (and not empty)."""
    if family:
        names = list(dict.fromkeys(family.get(a, "other") for a in arms))
        by_family = dict(zip(names, _colors(len(names)), strict=True))
        colors = {a: by_family[family.get(a, "other")] for a in arms}
        return colors, {a: family.get(a, "other") for a in arms}
    return dict(zip(arms, _colors(len(arms)), strict=True)), {a: a for a in arms}


def _curve_panel(
    ax: Any,
    by_arm: dict[str, Curve],
    arms: Sequence[str],
    colors: Mapping[str, Any],
    labels: Mapping[str, str],
    many: bool,
) -> None:
    """One metric's lines (and, unless `many`, CI bands) per arm, step 0 left out where it
    dwarfs the rest (the x label says so)."""
    skip = first_step_dwarfs([by_arm[a] for a in arms if a in by_arm])
    for arm in arms:
        c = by_arm.get(arm)
        if c is None:
            continue
        if skip and c.steps.size and c.steps[0] == 0:
            c = Curve(c.steps[1:], c.mean[1:], c.half[1:], c.n[1:])
        ax.plot(
            c.steps,
            c.mean,
            color=colors[arm],
            label=labels[arm],
            lw=0.8 if many else 1.4,
            alpha=0.6 if many else 1.0,
        )
        band = np.isfinite(c.half)
        if band.any() and not many:
            ax.fill_between(
                c.steps[band],
                (c.mean - c.half)[band],
                (c.mean + c.half)[band],
                color=colors[arm],
                alpha=0.18,
                lw=0,
            )
    ax.set_xlabel("step (step 0 left out: it dwarfs the rest)" if skip else "step")


AXIS_LABELS = {"N": "N (parameters)", "D": "D (tokens seen)", "C": "C ≈ 6·N·D"}


def plot_scaling(
    entries: Sequence[dict[str, Any]], metrics: Sequence[str], path: Path, title: str
) -> Path:
    """Log-log panels (one per metric): each group's points (per-size means with their CI as
    error bars), the plain power law (solid) and the saturating form (dashed) over them.

    `entries` are the scaling result's figure data for one split and axis: dicts with group,
    metric, axis, n (x per point), m (M per point), half (CI half widths, nan where none), plain
    (PowerLawFit or None), saturating (SaturatingFit or None) and, optionally, huber ((E, A, α)
    of E + A·N^−α fitted by Huber loss, dotted; absent or None: not drawn).
    """
    metrics = [m for m in metrics if any(e["metric"] == m for e in entries)]
    if not metrics:
        raise ValueError("plot_scaling: no entries")
    groups = list(dict.fromkeys(e["group"] for e in entries))
    colors = dict(zip(groups, _colors(len(groups)), strict=True))
    fig, axes = plt.subplots(
        1, len(metrics), figsize=(4.6 * len(metrics), 3.9), squeeze=False, constrained_layout=True
    )
    for ax, metric in zip(axes[0], metrics, strict=True):
        negative = False
        for e in entries:
            if e["metric"] == metric:
                negative |= _scaling_group(ax, e, colors[e["group"]])
        ax.set_xscale("log")
        flat = _scaling_y_axis(ax)
        ax.set_xlabel(AXIS_LABELS.get(entries[0]["axis"], "size"))
        # Within a factor 2 a log y-axis looks linear anyway; linear ticks read better.
        name = f"|{metric}|" if negative else metric
        ax.set_ylabel(name + (" (linear y)" if flat else ""))
        ax.grid(alpha=0.3, which="both")
        if len(groups) <= MAX_LEGEND:
            ax.legend(fontsize=6.5, loc="best")
    huber = any(e.get("huber") is not None for e in entries)
    forms = "solid: plain power law; dashed: E + A·N^a"
    forms += "; dotted: by Huber loss" if huber else ""
    # Wrapped to the figure's width (about 11 characters an inch at this size): one panel is
    # 4.6 inches wide, narrower than the title with its legend of forms.
    width = max(30, int(4.6 * len(metrics) * 11))
    fig.suptitle(textwrap.fill(f"{title} ({forms})", width), fontsize=10)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _scaling_group(ax: Any, e: dict[str, Any], color: Any) -> bool:
    """One group's points of one metric with their error bars and both fitted forms, as
    magnitudes; whether the metric is negative throughout (its axis then says |M|)."""
    m = np.asarray(e["m"], dtype=np.float64)
    n = np.asarray(e["n"], dtype=np.float64)
    half = np.asarray(e["half"], dtype=np.float64)
    plain, sat = e["plain"], e["saturating"]
    shown = np.abs(m)
    ok = shown > 0
    label = e["group"] or "all"
    if plain is not None:
        label += f": a={plain.a:.3g}"
    if sat is not None:
        label += f"; E={sat.E:.3g}, a={sat.a:.3g}"
    huber = e.get("huber")
    if huber is not None:
        label += f"; Huber E={huber[0]:.3g}, α={huber[2]:.3g}"
    err = np.where(np.isfinite(half), half, 0.0)[ok]
    ax.errorbar(
        n[ok], shown[ok], yerr=err, fmt="o", ms=3.5, color=color, alpha=0.8, lw=0.8, label=label
    )
    grid = np.geomspace(n.min(), n.max(), 60)
    if plain is not None:
        ax.plot(grid, np.abs(plain.predict(grid)), color=color, lw=1.3)
    if sat is not None:
        ax.plot(grid, np.abs(sat.predict(grid)), color=color, lw=1.1, ls="--")
    if huber is not None:
        big_e, big_a, alpha = huber
        ax.plot(grid, np.abs(big_e + big_a * grid**-alpha), color=color, lw=1.1, ls=":")
    return bool(np.all(m < 0))


def _scaling_y_axis(ax: Any) -> bool:
    """A log y-axis with plain-number ticks when the drawn values span a factor 2 or more;
    whether it stays linear (flat) instead."""
    low, high = ax.get_ylim()
    flat = not (low > 0 and high >= 2 * low)
    if not flat:
        ax.set_yscale("log")
        # Metrics rarely span a decade: plain numbers on the y ticks, the minor ticks
        # labelled too when no major one falls in between.
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%.3g"))
        if high < 10 * low:
            ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%.3g"))
            ax.tick_params(axis="y", which="minor", labelsize=7)
    return flat


def plot_frontier(entries: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """The compute-optimal frontier of each joint fit (rows: group and metric): N against C and
    D against C, the data points coloured by their value (yellow: lower), the optimal N*(C) and
    D*(C) as a line with its bootstrap band, over the data's compute and a decade beyond.

    `entries`: the scaling result's figure data "frontier" (joint_fits._frontier_series)."""
    if not entries:
        raise ValueError("plot_frontier: no entries")
    fig, axes = plt.subplots(
        len(entries), 2, figsize=(9.4, 3.8 * len(entries)), squeeze=False, constrained_layout=True
    )
    for row, e in zip(axes, entries, strict=True):
        pts, front = e["points"], e["frontier"]
        for ax, q, name in ((row[0], "N", "parameters N"), (row[1], "D", "tokens D")):
            dots = ax.scatter(pts["C"], pts[q], c=pts["value"], cmap="viridis_r", s=12, alpha=0.85)
            ax.plot(front["C"], front[f"{q}_opt"], color="black", lw=1.4, label=f"optimal {q}*(C)")
            low, high = front[f"{q}_opt_ci_low"], front[f"{q}_opt_ci_high"]
            if np.isfinite(low).any():
                ax.fill_between(front["C"], low, high, color="black", alpha=0.15, lw=0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("compute C (FLOPs)")
            ax.set_ylabel(name)
            ax.set_title(f"{e['group']}, {e['metric']}", fontsize=9)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7, loc="upper left")
        fig.colorbar(dots, ax=row[1], label=e["metric"])
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_joint_residuals(entries: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Where each joint fit L(N, D) misses (a panel per group and metric): the cells' log
    residuals ln(observed / fitted) against compute C, coloured by tokens per parameter D/N, a
    zero line, the fit's flags (joint_fits: E above a loss already reached, held-out error past
    its interval) in the panel's title. A form that fits leaves no trend in C or in D/N.

    `entries`: the scaling result's figure data "joint_residuals" (joint_fits._residual_series)."""
    if not entries:
        raise ValueError("plot_joint_residuals: no entries")
    cols = min(2, len(entries))
    rows = -(-len(entries) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.9 * cols, 3.6 * rows), squeeze=False, constrained_layout=True
    )
    for ax, e in zip(axes.flat, entries, strict=False):
        c, ratio = np.asarray(e["C"], float), np.asarray(e["D"], float) / np.asarray(e["N"], float)
        dots = ax.scatter(c, e["residual"], c=np.log10(ratio), cmap="viridis", s=14, alpha=0.85)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("compute C (FLOPs)")
        ax.set_ylabel("ln(observed / fitted)")
        flags = "; ".join(e["flags"])
        ax.set_title(
            "\n".join(x for x in (f"{e['group'] or 'all'}, {e['metric']}", flags) if x),
            fontsize=8,
            color="firebrick" if flags else "black",
        )
        ax.grid(alpha=0.3, which="both")
        fig.colorbar(dots, ax=ax, label="log10 tokens per parameter")
    for ax in list(axes.flat)[len(entries) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_share(entries: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """EE/CE against size (log x), one line per group and split, CI as error bars.

    `entries`: the scaling result's `ee_share` figure data (group, split, axis, x, share, half).
    """
    if not entries:
        raise ValueError("plot_share: no entries")
    labels = [f"{e['group'] or 'all'}, {e['split']}" for e in entries]
    colors = _colors(len(entries))
    fig, ax = plt.subplots(figsize=(5.8, 4.0), constrained_layout=True)
    for e, label, color in zip(entries, labels, colors, strict=True):
        half = np.where(np.isfinite(e["half"]), e["half"], 0.0)
        ax.errorbar(
            e["x"], e["share"], yerr=half, fmt="o-", ms=3.5, lw=1.1, color=color, label=label
        )
    ax.set_xscale("log")
    ax.set_xlabel(AXIS_LABELS.get(entries[0]["axis"], "size"))
    ax.set_ylabel("EE / CE")
    ax.grid(alpha=0.3, which="both")
    if len(entries) <= MAX_LEGEND:
        ax.legend(fontsize=7, loc="best")
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_pareto(points: np.ndarray, front: np.ndarray, labels: Sequence[str], path: Path) -> Path:
    """Scatter of the first two objectives (points: (n, k)), the Pareto front highlighted."""
    fig, ax = plt.subplots(figsize=(5.6, 4.4), constrained_layout=True)
    ax.scatter(points[~front, 0], points[~front, 1], s=12, color="0.6", label="dominated")
    order = np.argsort(points[front, 0])
    ax.plot(
        points[front, 0][order],
        points[front, 1][order],
        "o-",
        color="tab:red",
        ms=5,
        lw=1.2,
        label="Pareto front",
    )
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    title = "Pareto front"
    if points.shape[1] > 2:
        title += f" (first 2 of {points.shape[1]} objectives shown)"
    ax.set_title(title, fontsize=11)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
