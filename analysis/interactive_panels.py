"""The report's interactive panels that have no static twin: a search's optimisation history,
its slice plots and parallel coordinates (as Optuna's dashboard draws them, from the search
command's `figure_data["trials"]`), and the cost per arm (`analysis.cost_panel`). plotly, like
`analysis.interactive_figures`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from analysis.interactive_figures import HEIGHT, _grid, _layout, colour

MAX_SLICES = 12
"""Slice panels drawn at most (the parameters that vary, in the table's order)."""


def _numeric(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in present
    )


def history_figure(history: dict[str, Any]) -> go.Figure:
    """The first objective of every trial in the order the trials started, coloured by loss,
    and the best so far as a step line (Optuna's optimisation history)."""
    values = np.asarray(history["values"], dtype=np.float64)[:, 0]  # (n,)
    maximise = history["directions"][0] == "max"
    best = np.maximum.accumulate(values) if maximise else np.minimum.accumulate(values)
    number = np.arange(values.size)
    losses = history["loss"]
    fig = go.Figure()
    for i, loss in enumerate(dict.fromkeys(losses)):
        mine = np.array([lo == loss for lo in losses])
        fig.add_trace(
            go.Scatter(
                x=number[mine],
                y=values[mine],
                mode="markers",
                marker={"color": colour(i), "size": 9},
                name=str(loss),
                text=np.asarray(history["trial_id"], dtype=object)[mine],
                hovertemplate="trial %{text} (#%{x})<br>%{y:.4g}<extra>" + str(loss) + "</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=number,
            y=best,
            mode="lines",
            line={"shape": "hv", "color": "#444", "width": 1.5},
            name="best so far",
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(title_text="trial (in the order started)")
    fig.update_yaxes(title_text=history["objectives"][0])
    return _layout(fig, f"optimisation history: {history['objectives'][0]}")


def slice_figure(history: dict[str, Any]) -> go.Figure | None:
    """The first objective against each numeric parameter, one panel each, coloured by the
    trial's number (Optuna's slice plot); a loss's parameter shows that loss's trials only.
    None when no numeric parameter varies."""
    values = np.asarray(history["values"], dtype=np.float64)[:, 0]
    params = [
        p
        for p, v in history["params"].items()
        if _numeric(v) and len({x for x in v if x is not None}) > 1
    ][:MAX_SLICES]
    if not params:
        return None
    rows, cols = _grid(len(params), 4)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=params, shared_yaxes=True)
    number = np.arange(values.size)
    for k, p in enumerate(params):
        raw = history["params"][p]
        keep = np.array([v is not None for v in raw])
        x = np.array([v for v in raw if v is not None], dtype=np.float64)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=values[keep],
                mode="markers",
                marker={
                    "color": number[keep],
                    "colorscale": "Blues",
                    "cmin": 0,
                    "cmax": max(1, values.size - 1),
                    "size": 8,
                    "line": {"width": 0.5, "color": "#333"},
                    "showscale": k == 0,
                    "colorbar": {"title": {"text": "trial #"}},
                },
                text=np.asarray(history["trial_id"], dtype=object)[keep],
                hovertemplate=f"trial %{{text}}<br>{p} %{{x:.4g}}<br>%{{y:.4g}}<extra></extra>",
                showlegend=False,
            ),
            row=k // cols + 1,
            col=k % cols + 1,
        )
        if x.min() > 0 and x.max() >= 10 * x.min():
            fig.update_xaxes(type="log", row=k // cols + 1, col=k % cols + 1)
    fig.update_yaxes(title_text=history["objectives"][0], col=1)
    fig.update_layout(height=int(0.8 * HEIGHT) * rows + 80)
    out = _layout(fig, f"slices: {history['objectives'][0]} against each parameter", rows, False)
    return out.update_layout(height=int(0.8 * HEIGHT) * rows + 80)


def parallel_figures(history: dict[str, Any]) -> list[tuple[str, go.Figure]]:
    """Parallel coordinates of the parameters and the first objective, each line a trial,
    coloured by the objective: one over every trial with the parameters all trials share (when
    they vary), and one per loss with that loss's own parameters (a loss's α means nothing for
    another loss's trials). (name, figure) pairs; none where nothing varies."""
    values = np.asarray(history["values"], dtype=np.float64)[:, 0]
    losses = np.asarray(history["loss"], dtype=object)
    shared = [p for p in history["params"] if p not in history["loss_of"]]
    figures = []
    everyone = np.ones(values.size, dtype=bool)
    if shared:
        figures.append(("all trials", _parallel(history, shared, everyone, values)))
    for loss in dict.fromkeys(history["loss"]):
        own = [p for p, lo in history["loss_of"].items() if lo == loss]
        mine = losses == loss
        if own and mine.sum() >= 2:
            others = [p for p in shared if p != "loss"]
            figures.append((str(loss), _parallel(history, [*others, *own], mine, values)))
    return [(name, fig) for name, fig in figures if fig is not None]


def _parallel(
    history: dict[str, Any], params: list[str], rows: np.ndarray, values: np.ndarray
) -> go.Figure | None:
    """One parallel-coordinates figure over the trials `rows` (bool mask)."""
    dims = []
    for p in params:
        raw = [v for v, keep in zip(history["params"][p], rows, strict=True) if keep]
        if len({str(v) for v in raw}) < 2:
            continue
        if _numeric(raw):
            dims.append({"label": p, "values": np.asarray(raw, dtype=np.float64)})
        else:
            levels = sorted({str(v) for v in raw})
            dims.append(
                {
                    "label": p,
                    "values": [levels.index(str(v)) for v in raw],
                    "tickvals": list(range(len(levels))),
                    "ticktext": levels,
                }
            )
    if not dims:
        return None
    objective = history["objectives"][0]
    dims.append({"label": objective, "values": values[rows]})
    fig = go.Figure(
        go.Parcoords(
            line={
                "color": values[rows],
                "colorscale": "Viridis",
                "reversescale": history["directions"][0] == "min",
                "showscale": True,
            },
            dimensions=dims,
        )
    )
    return _layout(fig, f"parallel coordinates: {objective}", legend=False)


COST_PANELS = (
    ("core_h", "core-hours", "worker CPU-hours"),
    ("gpu_h", "GPU-hours", "GPUs × wall hours"),
    ("startup_share", "start-up share", "start-up / wall time"),
    ("tokens_per_s", "tokens/s", "training tokens per second, mean over reports"),
    ("peak_mem_mb", "peak memory (MiB)", "peak accelerator memory (CPU: RSS)"),
)


def cost_figure(per_arm: pl.DataFrame) -> go.Figure | None:
    """Bars per arm: core- and GPU-hours (summed over its trials), start-up share, tokens/s and
    peak memory (means over its trials); the columns `analysis.cost_panel` makes. None without
    any of them."""
    panels = [
        (c, t, h)
        for c, t, h in COST_PANELS
        if c in per_arm.columns and per_arm[c].drop_nulls().len() > 0
    ]
    if not panels:
        return None
    rows, cols = _grid(len(panels), 3)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[t for _, t, _ in panels])
    arms = per_arm["arm"].to_list()
    for k, (column, title, how) in enumerate(panels):
        fig.add_trace(
            go.Bar(
                x=arms,
                y=per_arm[column].to_list(),
                marker={"color": [colour(i) for i in range(len(arms))]},
                showlegend=False,
                hovertemplate=f"%{{x}}<br>{title}: %{{y:.4g}}<extra>{how}</extra>",
            ),
            row=k // cols + 1,
            col=k % cols + 1,
        )
    fig.update_xaxes(tickangle=-30)
    return _layout(fig, "cost per arm", rows, legend=False)
