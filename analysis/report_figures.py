"""The report's two kinds of figures behind one interface: `StaticFigures` draws PNGs with
matplotlib (`analysis.figures`; `report --static`, and the committed study reports) and
`InteractiveFigures` draws plotly figures into the page (`analysis.interactive_figures`,
`analysis.interactive_panels`), with plotly's JavaScript written beside the page as
`plotly.min.js`, so the page opens offline. A section builder asks for a figure by what it
shows and gets a `Figure` (its HTML), whichever kind the report is.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from analysis import comparison_plots, figures
from analysis.arm_curves import Curve
from records.errors import ResultsError

PLOTLY_JS = "plotly.min.js"
"""plotly's JavaScript, written beside index.html (never fetched from elsewhere)."""


@dataclass(frozen=True)
class Figure:
    """One figure of the page: its name (file stem or element id), caption and HTML."""

    name: str
    alt: str
    html: str


class StaticFigures:
    """PNG files under OUT/figures/, shown as <img>; no panel without a static twin."""

    interactive = False

    def __init__(self, out: Path) -> None:
        self.dir = out / "figures"
        self.dir.mkdir(parents=True, exist_ok=True)

    def _img(self, name: str, alt: str) -> Figure:
        src = f"figures/{name}.png"
        return Figure(name, alt, f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">')

    def curves(
        self,
        name: str,
        alt: str,
        curves: dict[str, dict[str, Curve]],
        metrics: Sequence[str],
        order: Sequence[str],
        title: str,
        family: Mapping[str, str],
        tokens: Mapping[str, np.ndarray] | None = None,
    ) -> Figure:
        figures.plot_curves(curves, metrics, order, self.dir / f"{name}.png", title, family)
        return self._img(name, alt)

    def scaling(
        self, name: str, alt: str, entries: Sequence[dict], metrics: Sequence[str], title: str
    ) -> Figure:
        figures.plot_scaling(entries, metrics, self.dir / f"{name}.png", title)
        return self._img(name, alt)

    def frontier(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        figures.plot_frontier(entries, self.dir / f"{name}.png", title)
        return self._img(name, alt)

    def share(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        figures.plot_share(entries, self.dir / f"{name}.png", title)
        return self._img(name, alt)

    def residuals(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        figures.plot_joint_residuals(entries, self.dir / f"{name}.png", title)
        return self._img(name, alt)

    def comparison(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        comparison_plots.plot_comparison(entries, self.dir / f"{name}.png", title)
        return self._img(name, alt)

    def pareto(self, name: str, alt: str, pareto: dict[str, Any]) -> Figure:
        figures.plot_pareto(
            pareto["points"], pareto["front"], pareto["objectives"], self.dir / f"{name}.png"
        )
        return self._img(name, alt)

    def search(self, history: dict[str, Any]) -> list[Figure]:
        return []

    def costs(self, per_arm: pl.DataFrame) -> Figure | None:
        return None

    def finish(self, out: Path) -> list[str]:
        """What the page's <head> loads: nothing."""
        return []


CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"scale": 2}}
"""plotly's per-figure options: its mode bar (zoom, pan, autoscale, PNG download) without the
logo link; PNG downloads at twice the screen's resolution."""


def plotly_available() -> bool:
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


class InteractiveFigures:
    """plotly figures in the page, each a <div> and the script that draws it."""

    interactive = True

    def __init__(self, out: Path) -> None:
        if not plotly_available():
            raise ResultsError(
                "the interactive report needs plotly: pip install 'numsweep[report]' (or "
                "plotly), or give --static for PNG figures"
            )
        # Imported here: plotly is the `report` extra, and the static report runs without it.
        from analysis import interactive_figures, interactive_panels

        self.draw, self.panels = interactive_figures, interactive_panels

    def _div(self, name: str, alt: str, fig: Any, controls: str = "") -> Figure:
        import plotly.io as pio

        div = pio.to_html(
            fig,
            full_html=False,
            include_plotlyjs=False,
            div_id=f"fig-{name}",
            config={
                **CONFIG,
                "toImageButtonOptions": {**CONFIG["toImageButtonOptions"], "filename": name},
            },
        )
        return Figure(
            name, alt, f'<figure class="plot" title="{html.escape(alt)}">{controls}{div}</figure>'
        )

    def curves(
        self,
        name: str,
        alt: str,
        curves: dict[str, dict[str, Curve]],
        metrics: Sequence[str],
        order: Sequence[str],
        title: str,
        family: Mapping[str, str],
        tokens: Mapping[str, np.ndarray] | None = None,
    ) -> Figure:
        fig = self.draw.curves_figure(curves, metrics, order, title, family=family, tokens=tokens)
        return self._div(name, alt, fig, curve_controls(name, tokens is not None))

    def scaling(
        self, name: str, alt: str, entries: Sequence[dict], metrics: Sequence[str], title: str
    ) -> Figure:
        return self._div(name, alt, self.draw.scaling_figure(entries, metrics, title))

    def frontier(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        return self._div(name, alt, self.draw.frontier_figure(entries, title))

    def share(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        return self._div(name, alt, self.draw.share_figure(entries, title))

    def residuals(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        return self._div(name, alt, self.draw.joint_residuals_figure(entries, title))

    def comparison(self, name: str, alt: str, entries: Sequence[dict], title: str) -> Figure:
        from analysis.interactive_comparison import comparison_figure  # plotly: see __init__

        return self._div(name, alt, comparison_figure(entries, title))

    def pareto(self, name: str, alt: str, pareto: dict[str, Any]) -> Figure:
        fig = self.draw.pareto_figure(
            pareto["points"], pareto["front"], pareto["objectives"], pareto["trial_id"]
        )
        return self._div(name, alt, fig)

    def search(self, history: dict[str, Any]) -> list[Figure]:
        """Optimisation history, slices and parallel coordinates of a search."""
        out = [
            self._div("search_history", "optimisation history", self.panels.history_figure(history))
        ]
        slices = self.panels.slice_figure(history)
        if slices is not None:
            out.append(self._div("search_slices", "slice plots", slices))
        for k, (which, fig) in enumerate(self.panels.parallel_figures(history)):
            out.append(self._div(f"search_parallel_{k}", f"parallel coordinates, {which}", fig))
        return out

    def costs(self, per_arm: pl.DataFrame) -> Figure | None:
        fig = self.panels.cost_figure(per_arm)
        return None if fig is None else self._div("cost", "cost per arm", fig)

    def finish(self, out: Path) -> list[str]:
        """plotly's JavaScript beside the page; the <head> line that loads it."""
        from plotly.offline import get_plotlyjs

        path = out / PLOTLY_JS
        text = get_plotlyjs()
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        return [f'<script src="{PLOTLY_JS}" charset="utf-8"></script>']


def curve_controls(name: str, tokens: bool) -> str:
    """The controls above a curves figure: the x-axis (steps, or tokens seen where every curve
    has them) and the smoothing weight (the page's SCRIPT applies both)."""
    axis = (
        f'x: <label><input type="radio" name="x-{name}" value="step" checked> step</label> '
        f'<label><input type="radio" name="x-{name}" value="tokens"> tokens seen</label> · '
        if tokens
        else ""
    )
    return (
        f'<div class="curve-controls" data-plot="fig-{name}">{axis}smoothing (EMA weight) '
        f'<input type="range" min="0" max="0.99" step="0.01" value="0"> <output>0.00</output>'
        "</div>"
    )


def figure_writer(out: Path, static: bool) -> StaticFigures | InteractiveFigures:
    """The figures of a report in `out`: PNGs with `static`, else plotly's."""
    return StaticFigures(out) if static else InteractiveFigures(out)
