"""The interactive figure of losses compared across scale (the scaling command's `--reference`),
drawn with plotly like analysis.interactive_figures and as analysis.comparison_plots draws the
PNG: per compared line, every group's loss against N (cell means, fitted plain law, band) and
its parameter multiplier against the reference at every N with its interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.interactive_figures import HEIGHT, colour


def _band(x: np.ndarray, low: Any, high: Any, hex_colour: str) -> go.Scatter:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[k : k + 2], 16) for k in (0, 2, 4))
    return go.Scatter(
        x=np.r_[x, x[::-1]],
        y=np.r_[high, np.asarray(low)[::-1]],
        fill="toself",
        fillcolor=f"rgba({r},{g},{b},0.15)",
        line={"width": 0},
        hoverinfo="skip",
        showlegend=False,
    )


def _curves(fig: go.Figure, row: int, entry: dict[str, Any], colours: dict[str, str]) -> None:
    for c in entry["curves"]:
        hue = colours[c["name"]]
        if c["low"] is not None:
            fig.add_trace(_band(c["grid"], c["low"], c["high"], hue), row=row, col=1)
        fig.add_trace(
            go.Scatter(
                x=c["grid"],
                y=c["fit"],
                mode="lines",
                line={"color": hue},
                name=c["name"],
                legendgroup=c["name"],
                showlegend=row == 1,
            ),
            row=row,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=c["n"],
                y=c["m"],
                mode="markers",
                marker={"color": hue, "size": 7},
                legendgroup=c["name"],
                showlegend=False,
                hovertemplate=f"{c['name']}<br>N %{{x:.3g}}<br>L %{{y:.4g}}<extra></extra>",
            ),
            row=row,
            col=1,
        )


def _multipliers(fig: go.Figure, row: int, entry: dict[str, Any], colours: dict[str, str]) -> None:
    for name in dict.fromkeys(r["group"] for r in entry["multipliers"]):
        rows = sorted((r for r in entry["multipliers"] if r["group"] == name), key=lambda r: r["n"])
        n = np.array([r["n"] for r in rows])
        low = np.array([np.nan if r["low"] is None else r["low"] for r in rows])
        high = np.array([np.nan if r["high"] is None else r["high"] for r in rows])
        hue = colours[name]
        fig.add_trace(_band(n, low, high, hue), row=row, col=2)
        fig.add_trace(
            go.Scatter(
                x=n,
                y=[r["multiplier"] for r in rows],
                mode="lines+markers",
                line={"color": hue},
                legendgroup=name,
                showlegend=False,
                marker={
                    "symbol": ["diamond" if r["where"] == "planned" else "circle" for r in rows]
                },
                customdata=[r["where"] for r in rows],
                hovertemplate=f"{name} vs {entry['reference']}<br>N %{{x:.3g}} (%{{customdata}})"
                "<br>multiplier %{y:.4g}<extra></extra>",
            ),
            row=row,
            col=2,
        )


def comparison_figure(entries: Sequence[dict[str, Any]], title: str) -> go.Figure:
    """One row per compared line: the curves with bands, the multipliers against N."""
    titles = [t for e in entries for t in (e["title"], f"multiplier against {e['reference']}")]
    fig = make_subplots(rows=len(entries), cols=2, subplot_titles=titles)
    for row, e in enumerate(entries, start=1):
        colours = {c["name"]: colour(i) for i, c in enumerate(e["curves"])}
        _curves(fig, row, e, colours)
        _multipliers(fig, row, e, colours)
        fig.add_hline(y=1.0, line={"dash": "dot", "width": 1, "color": "black"}, row=row, col=2)
        fig.update_xaxes(type="log", title_text="parameters N", row=row)
        fig.update_yaxes(type="log", title_text=e["metric"], row=row, col=1)
        fig.update_yaxes(type="log", title_text="multiplier N*/N", row=row, col=2)
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=HEIGHT * len(entries) + 60,
        margin={"l": 60, "r": 20, "t": 70, "b": 50},
        template="plotly_white",
        hovermode="closest",
    )
    return fig
