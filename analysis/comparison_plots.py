"""The PNG figure of losses compared across scale (the scaling command's `--reference`), drawn
with matplotlib like analysis.figures: per compared line, the loss against N of every group (cell
means, the fitted plain law with its bootstrap band) and each group's parameter multiplier
against the reference at every N (exponents per group, with its interval)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never a window, also on machines without a display

import matplotlib.pyplot as plt
import numpy as np

from analysis.figures import DPI, MAX_LEGEND

PLANNED_MARKER = "D"
"""The marker of a multiplier at a planned size (--at), beside the observed sizes' circles."""


def _curves(ax: Any, entry: dict[str, Any], colours: dict[str, Any]) -> None:
    for c in entry["curves"]:
        colour = colours[c["name"]]
        ax.scatter(c["n"], c["m"], s=16, color=colour, zorder=3)
        ax.plot(c["grid"], c["fit"], color=colour, lw=1.3, label=c["name"])
        if c["low"] is not None:
            ax.fill_between(c["grid"], c["low"], c["high"], color=colour, alpha=0.15, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters N")
    ax.set_ylabel(entry["metric"])
    ax.grid(alpha=0.3, which="both")
    if len(entry["curves"]) <= MAX_LEGEND:
        ax.legend(fontsize=7, loc="best")


def _multipliers(ax: Any, entry: dict[str, Any], colours: dict[str, Any]) -> None:
    ax.axhline(1.0, color="black", lw=0.8, ls=":")
    for name in dict.fromkeys(r["group"] for r in entry["multipliers"]):
        rows = sorted((r for r in entry["multipliers"] if r["group"] == name), key=lambda r: r["n"])
        n = np.array([r["n"] for r in rows])
        m = np.array([r["multiplier"] for r in rows])
        low = np.array([np.nan if r["low"] is None else r["low"] for r in rows])
        high = np.array([np.nan if r["high"] is None else r["high"] for r in rows])
        planned = np.array([r["where"] == "planned" for r in rows])
        colour = colours[name]
        ax.plot(n, m, color=colour, lw=1.3, label=f"{name} vs {entry['reference']}")
        ax.fill_between(n, low, high, color=colour, alpha=0.15, lw=0)
        ax.scatter(n[~planned], m[~planned], s=16, color=colour, zorder=3)
        ax.scatter(n[planned], m[planned], s=22, color=colour, marker=PLANNED_MARKER, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters N")
    ax.set_ylabel("parameter multiplier N*/N")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="best")


def plot_comparison(entries: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """One row per compared line: the curves with bands, the multipliers against N.

    `entries`: the scaling result's figure data "loss_comparison" (loss_comparison._figure)."""
    if not entries:
        raise ValueError("plot_comparison: no entries")
    fig, axes = plt.subplots(
        len(entries), 2, figsize=(9.4, 3.8 * len(entries)), squeeze=False, constrained_layout=True
    )
    for row, e in zip(axes, entries, strict=True):
        names = [c["name"] for c in e["curves"]]
        cmap = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
        colours = {name: cmap(i % cmap.N) for i, name in enumerate(names)}
        _curves(row[0], e, colours)
        _multipliers(row[1], e, colours)
        row[0].set_title(e["title"], fontsize=9)
        row[1].set_title(f"multiplier against {e['reference']}", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
