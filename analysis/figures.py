"""PNG figures for the report, drawn with matplotlib's Agg backend (no display needed): curves
over training per arm, log-log scaling plots with the fitted lines, and the Pareto plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window, also on machines without a display

import matplotlib.pyplot as plt
import numpy as np

from analysis.curves import Curve

MAX_LEGEND = 12
"""More arms than this get no legend (it would cover the plot); the caption says so."""
DPI = 110


def _colors(n: int) -> list[Any]:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(i % cmap.N) for i in range(n)]


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
    if many and family:
        names = list(dict.fromkeys(family.get(a, "other") for a in arms))
        by_family = dict(zip(names, _colors(len(names)), strict=True))
        colors = {a: by_family[family.get(a, "other")] for a in arms}
        labels = {a: family.get(a, "other") for a in arms}
    else:
        colors = dict(zip(arms, _colors(len(arms)), strict=True))
        labels = {a: a for a in arms}
    for ax, metric in zip(axes[0], metrics, strict=True):
        for arm in arms:
            c = curves[metric].get(arm)
            if c is None:
                continue
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
        ax.set_xlabel("step")
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


def plot_scaling(
    entries: Sequence[dict[str, Any]], leaves: Sequence[str], path: Path, title: str
) -> Path:
    """Log-log panels (one per metric leaf): each group's points and its fitted power law.

    `entries` are the scaling result's figure data for one split: dicts with group, leaf,
    n (N per point), m (M per point) and fit (PowerLawFit or None).
    """
    leaves = [leaf for leaf in leaves if any(e["leaf"] == leaf for e in entries)]
    if not leaves:
        raise ValueError("plot_scaling: no entries")
    groups = list(dict.fromkeys(e["group"] for e in entries))
    colors = dict(zip(groups, _colors(len(groups)), strict=True))
    fig, axes = plt.subplots(
        1, len(leaves), figsize=(4.6 * len(leaves), 3.8), squeeze=False, constrained_layout=True
    )
    for ax, leaf in zip(axes[0], leaves, strict=True):
        negative = False
        for e in entries:
            if e["leaf"] != leaf:
                continue
            fit = e["fit"]
            m = np.asarray(e["m"], dtype=np.float64)
            n = np.asarray(e["n"], dtype=np.float64)
            if fit is not None and fit.sign < 0:
                negative = True
            shown = np.abs(m)
            ok = shown > 0
            label = e["group"]
            if fit is not None:
                label += f": a={fit.a:.3g}"
            ax.scatter(n[ok], shown[ok], s=14, color=colors[e["group"]], alpha=0.75, label=label)
            if fit is not None:
                grid = np.geomspace(n.min(), n.max(), 50)
                ax.plot(grid, np.abs(fit.predict(grid)), color=colors[e["group"]], lw=1.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (parameters)")
        ax.set_ylabel(f"|{leaf}|" if negative else leaf)
        ax.grid(alpha=0.3, which="both")
        if len(groups) <= MAX_LEGEND:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=11)
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
