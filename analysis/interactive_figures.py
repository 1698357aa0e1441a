"""Interactive figures for the HTML report, drawn with plotly (the `report` extra): learning curves
per arm with seed bands, log-log scaling fits, the compute-optimal frontier, EE's share of CE, the
Pareto front, a search's optimisation history, slices and parallel coordinates (as Optuna's
dashboard draws them), and the cost per arm. Each function returns a `plotly.graph_objects.Figure`;
`analysis.report_figures` writes it into the page. Hover, zoom, legend toggling and PNG download
are plotly's own; the curves' smoothing and step/token axis are the page's script
(`analysis.report_page.SCRIPT`), which reads each trace's `meta`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from analysis.arm_curves import Curve
from analysis.figures import AXIS_LABELS, MAX_LEGEND, first_step_dwarfs

PALETTE = qualitative.D3 + qualitative.Alphabet
HEIGHT = 380
"""Pixels per row of panels."""


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[k : k + 2], 16) for k in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _grid(n: int, cols: int = 3) -> tuple[int, int]:
    """(rows, cols) of panels for n subplots."""
    cols = min(cols, n)
    return -(-n // cols), cols


def _layout(fig: go.Figure, title: str, rows: int = 1, legend: bool = True) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        height=HEIGHT * rows + 60,
        margin={"l": 60, "r": 20, "t": 70, "b": 50},
        template="plotly_white",
        showlegend=legend,
        legend={"font": {"size": 11}, "groupclick": "togglegroup"},
        hovermode="closest",
    )
    return fig


def _arm_colours(
    arms: Sequence[str], family: Mapping[str, str] | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Each arm's colour and legend group: its own, or its family's (its loss) when given."""
    if family:
        names = list(dict.fromkeys(family.get(a, "other") for a in arms))
        by_family = {f: colour(i) for i, f in enumerate(names)}
        return {a: by_family[family.get(a, "other")] for a in arms}, {
            a: family.get(a, "other") for a in arms
        }
    return {a: colour(i) for i, a in enumerate(arms)}, {a: a for a in arms}


def curves_figure(
    curves: Mapping[str, Mapping[str, Curve]],
    metrics: Sequence[str],
    order: Sequence[str],
    title: str,
    *,
    family: Mapping[str, str] | None = None,
    tokens: Mapping[str, np.ndarray] | None = None,
) -> go.Figure:
    """One panel per metric, one line per arm (mean over seeds, hover: the seeds at that step)
    with its band where n ≥ 2; clicking a legend entry hides that arm in every panel. With more
    than MAX_LEGEND arms, no bands and one colour and legend entry per `family`.

    `tokens`: arm -> its mean tokens seen at each step of its curves (keyed `metric|arm`), put
    in each trace's meta for the page's step/tokens switch."""
    metrics = [m for m in metrics if m in curves]
    arms = [a for a in order if any(a in curves[m] for m in metrics)]
    many = len(arms) > MAX_LEGEND
    colours, groups = _arm_colours(arms, family if many else None)
    rows, cols = _grid(len(metrics))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=list(metrics))
    shown: set[str] = set()
    for k, metric in enumerate(metrics):
        row, col = k // cols + 1, k % cols + 1
        by_arm = curves[metric]
        dwarfs = first_step_dwarfs([by_arm[a] for a in arms if a in by_arm])
        for arm in arms:
            c = by_arm.get(arm)
            if c is None:
                continue
            x_tokens = None if tokens is None else tokens.get(f"{metric}|{arm}")
            meta = {"tokens": None if x_tokens is None else x_tokens.tolist()}
            band = np.isfinite(c.half)
            if band.sum() >= 2 and not many:
                for sign, fill in ((1, "none"), (-1, "tonexty")):
                    fig.add_trace(
                        go.Scatter(
                            x=c.steps[band],
                            y=(c.mean + sign * c.half)[band],
                            mode="lines",
                            line={"width": 0},
                            fill=fill,
                            fillcolor=_rgba(colours[arm], 0.18),
                            legendgroup=groups[arm],
                            showlegend=False,
                            hoverinfo="skip",
                            meta={
                                "tokens": None if x_tokens is None else x_tokens[band].tolist(),
                                "band": True,
                            },
                        ),
                        row=row,
                        col=col,
                    )
            fig.add_trace(
                go.Scatter(
                    x=c.steps,
                    y=c.mean,
                    mode="lines+markers" if c.steps.size <= 30 else "lines",
                    marker={"size": 4},
                    line={"color": colours[arm], "width": 1.0 if many else 1.8},
                    name=groups[arm],
                    legendgroup=groups[arm],
                    showlegend=groups[arm] not in shown,
                    customdata=c.n,
                    hovertemplate=f"{arm}<br>step %{{x}}<br>{metric} %{{y:.4g}}"
                    "<br>seeds: %{customdata}<extra></extra>",
                    meta=meta,
                ),
                row=row,
                col=col,
            )
            shown.add(groups[arm])
        if dwarfs:
            later = np.concatenate([by_arm[a].mean[1:] for a in arms if a in by_arm])
            later = later[np.isfinite(later)]
            pad = 0.05 * float(np.ptp(later)) or 0.05
            fig.update_yaxes(
                range=[float(later.min()) - pad, float(later.max()) + pad], row=row, col=col
            )
            fig.layout.annotations[k].text = f"{metric} (step 0 off scale: double-click shows it)"
        fig.update_xaxes(title_text="step", row=row, col=col)
    return _layout(fig, title, rows)


def _log_y(values: np.ndarray) -> bool:
    """A log y-axis where the positive values span a factor 2 or more (as figures.py)."""
    v = np.abs(values[np.isfinite(values)])
    return bool(v.size and v.min() > 0 and v.max() >= 2 * v.min())


def scaling_figure(
    entries: Sequence[dict[str, Any]], metrics: Sequence[str], title: str
) -> go.Figure:
    """Log-log panels, one per metric: each group's per-size means with their CI as error bars,
    the plain power law (solid), the saturating form E + A·N^a (dashed) and a Huber fit
    (dotted) where given (the scaling result's figure data, as figures.plot_scaling)."""
    metrics = [m for m in metrics if any(e["metric"] == m for e in entries)]
    groups = list(dict.fromkeys(e["group"] for e in entries))
    rows, cols = _grid(len(metrics))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=list(metrics))
    for k, metric in enumerate(metrics):
        row, col = k // cols + 1, k % cols + 1
        drawn = []
        for e in entries:
            if e["metric"] != metric:
                continue
            g = groups.index(e["group"])
            drawn.append(np.abs(np.asarray(e["m"], dtype=np.float64)))
            _scaling_group(fig, e, colour(g), row, col, first=k == 0)
        fig.update_xaxes(type="log", title_text=AXIS_LABELS.get(entries[0]["axis"], "size"))
        if drawn and _log_y(np.concatenate(drawn)):
            fig.update_yaxes(type="log", row=row, col=col)
    return _layout(fig, f"{title} (solid: plain power law; dashed: E + A·N^a; dotted: Huber)", rows)


def _scaling_group(
    fig: go.Figure, e: dict[str, Any], c: str, row: int, col: int, first: bool
) -> None:
    """One group's points of one metric with their error bars and fitted forms (magnitudes)."""
    n = np.asarray(e["n"], dtype=np.float64)
    m = np.abs(np.asarray(e["m"], dtype=np.float64))
    half = np.asarray(e["half"], dtype=np.float64)
    name = e["group"] or "all"
    fig.add_trace(
        go.Scatter(
            x=n,
            y=m,
            mode="markers",
            marker={"color": c, "size": 7},
            error_y={"array": np.where(np.isfinite(half), half, 0.0), "visible": True},
            name=name,
            legendgroup=name,
            showlegend=first,
            hovertemplate=f"{name}<br>%{{x:.3g}}<br>%{{y:.4g}}<extra></extra>",
        ),
        row=row,
        col=col,
    )
    grid = np.geomspace(n.min(), n.max(), 60)
    fits = []
    if e.get("plain") is not None:
        fits.append(("plain", np.abs(e["plain"].predict(grid)), "solid", f"a={e['plain'].a:.3g}"))
    if e.get("saturating") is not None:
        sat = e["saturating"]
        fits.append(
            ("saturating", np.abs(sat.predict(grid)), "dash", f"E={sat.E:.3g}, a={sat.a:.3g}")
        )
    if e.get("huber") is not None:
        big_e, big_a, alpha = e["huber"]
        fits.append(
            ("Huber", np.abs(big_e + big_a * grid**-alpha), "dot", f"E={big_e:.3g}, α={alpha:.3g}")
        )
    for form, y, dash, what in fits:
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=y,
                mode="lines",
                line={"color": c, "dash": dash, "width": 1.5},
                legendgroup=name,
                showlegend=False,
                hovertemplate=f"{name}, {form}: {what}<extra></extra>",
            ),
            row=row,
            col=col,
        )


def frontier_figure(entries: Sequence[dict[str, Any]], title: str) -> go.Figure:
    """Per joint fit (a row): N against C and D against C, the points coloured by their value,
    the optimal N*(C) and D*(C) with their bootstrap band (as figures.plot_frontier)."""
    titles = [f"{e['group']}, {e['metric']}: {q}" for e in entries for q in ("N*(C)", "D*(C)")]
    fig = make_subplots(rows=len(entries), cols=2, subplot_titles=titles)
    for r, e in enumerate(entries, start=1):
        pts, front = e["points"], e["frontier"]
        for col, q in ((1, "N"), (2, "D")):
            low, high = front[f"{q}_opt_ci_low"], front[f"{q}_opt_ci_high"]
            if np.isfinite(low).any():
                fig.add_trace(
                    go.Scatter(
                        x=np.r_[front["C"], front["C"][::-1]],
                        y=np.r_[high, low[::-1]],
                        fill="toself",
                        fillcolor="rgba(0,0,0,0.12)",
                        line={"width": 0},
                        hoverinfo="skip",
                        showlegend=False,
                    ),
                    row=r,
                    col=col,
                )
            fig.add_trace(
                go.Scatter(
                    x=front["C"],
                    y=front[f"{q}_opt"],
                    mode="lines",
                    line={"color": "black", "width": 2},
                    name=f"optimal {q}*(C)",
                    showlegend=False,
                    hovertemplate=f"C %{{x:.3g}}<br>{q}* %{{y:.3g}}<extra></extra>",
                ),
                row=r,
                col=col,
            )
            fig.add_trace(
                go.Scatter(
                    x=pts["C"],
                    y=pts[q],
                    mode="markers",
                    marker={
                        "color": pts["value"],
                        "colorscale": "Viridis",
                        "reversescale": True,
                        "size": 7,
                        "showscale": col == 2,
                        "colorbar": {"title": {"text": e["metric"]}, "len": 1 / len(entries)},
                    },
                    showlegend=False,
                    customdata=pts["value"],
                    hovertemplate=f"C %{{x:.3g}}<br>{q} %{{y:.3g}}<br>{e['metric']} "
                    "%{customdata:.4g}<extra></extra>",
                ),
                row=r,
                col=col,
            )
            fig.update_xaxes(type="log", title_text="compute C (FLOPs)", row=r, col=col)
            fig.update_yaxes(type="log", title_text=f"{q}", row=r, col=col)
    return _layout(fig, title, len(entries), legend=False)


def joint_residuals_figure(entries: Sequence[dict[str, Any]], title: str) -> go.Figure:
    """The joint fits' log residuals against compute, coloured by tokens per parameter, a panel
    per group and metric with its flags (as figures.plot_joint_residuals)."""
    rows, cols = _grid(len(entries), cols=2)
    titles = [
        f"{e['group'] or 'all'}, {e['metric']}"
        + (f" ({'; '.join(e['flags'])})" if e["flags"] else "")
        for e in entries
    ]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles)
    for i, e in enumerate(entries):
        r, c = divmod(i, cols)
        ratio = np.log10(np.asarray(e["D"], float) / np.asarray(e["N"], float))
        fig.add_trace(
            go.Scatter(
                x=e["C"],
                y=e["residual"],
                mode="markers",
                marker={"color": ratio, "colorscale": "Viridis", "size": 7, "showscale": i == 0,
                        "colorbar": {"title": {"text": "log10 D/N"}}},
                customdata=np.c_[e["N"], e["D"]],
                hovertemplate="C %{x:.3g}<br>N %{customdata[0]:.3g}<br>D %{customdata[1]:.3g}"
                "<br>ln(obs/fit) %{y:.4f}<extra></extra>",
                showlegend=False,
            ),
            row=r + 1,
            col=c + 1,
        )  # fmt: skip
        fig.add_hline(y=0.0, line={"color": "black", "width": 1}, row=r + 1, col=c + 1)
        fig.update_xaxes(type="log", title_text="compute C (FLOPs)", row=r + 1, col=c + 1)
        fig.update_yaxes(title_text="ln(observed / fitted)", row=r + 1, col=c + 1)
    return _layout(fig, title, rows, legend=False)


def share_figure(entries: Sequence[dict[str, Any]], title: str) -> go.Figure:
    """EE/CE against size (log x), one line per group and split, CI as error bars."""
    fig = go.Figure()
    for i, e in enumerate(entries):
        name = f"{e['group'] or 'all'}, {e['split']}"
        half = np.asarray(e["half"], dtype=np.float64)
        fig.add_trace(
            go.Scatter(
                x=e["x"],
                y=e["share"],
                mode="lines+markers",
                line={"color": colour(i)},
                error_y={"array": np.where(np.isfinite(half), half, 0.0), "visible": True},
                name=name,
                hovertemplate=f"{name}<br>%{{x:.3g}}<br>EE/CE %{{y:.4g}}<extra></extra>",
            )
        )
    fig.update_xaxes(type="log", title_text=AXIS_LABELS.get(entries[0]["axis"], "size"))
    fig.update_yaxes(title_text="EE / CE")
    return _layout(fig, title)


def pareto_figure(
    points: np.ndarray, front: np.ndarray, labels: Sequence[str], trial_ids: Sequence[str]
) -> go.Figure:
    """The first two objectives of every trial (points: (n, k)), the Pareto front as a line."""
    ids = np.asarray(trial_ids, dtype=object)
    order = np.argsort(points[front, 0])
    fig = go.Figure(
        [
            go.Scatter(
                x=points[~front, 0],
                y=points[~front, 1],
                mode="markers",
                marker={"color": "#999999", "size": 7},
                name="dominated",
                text=ids[~front],
                hovertemplate="trial %{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
            ),
            go.Scatter(
                x=points[front, 0][order],
                y=points[front, 1][order],
                mode="lines+markers",
                marker={"color": "#d62728", "size": 9},
                name="Pareto front",
                text=ids[front][order],
                hovertemplate="trial %{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>",
            ),
        ]
    )
    fig.update_xaxes(title_text=labels[0])
    fig.update_yaxes(title_text=labels[1])
    more = f" (first 2 of {points.shape[1]} objectives)" if points.shape[1] > 2 else ""
    return _layout(fig, "Pareto front" + more)
