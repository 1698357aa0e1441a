"""The joint fit's residual figure (analysis.figures.plot_joint_residuals, and its interactive
twin analysis.interactive_figures.joint_residuals_figure): a panel per fit, its points where the
data are, its flags named in the panel's title. Fast: no store."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.figures import plot_joint_residuals

N = np.array([1e8, 1e8, 1e9, 1e9])
D = np.array([2e9, 2e10, 2e10, 2e11])
ENTRIES = [
    {"group": "", "metric": "loss", "C": 6 * N * D, "N": N, "D": D,
     "residual": np.array([0.01, -0.02, 0.0, 0.03]), "flags": []},
    {"group": "mle", "metric": "loss", "C": 6 * N * D, "N": N, "D": D,
     "residual": np.array([0.1, -0.1, 0.05, -0.2]),
     "flags": ["E above the lowest loss reached"]},
]  # fmt: skip


def test_the_static_figure_is_a_png(tmp_path):
    path = plot_joint_residuals(ENTRIES, tmp_path / "r.png", "residuals")
    assert path.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="no entries"):
        plot_joint_residuals([], tmp_path / "none.png", "residuals")


def test_the_interactive_figure_has_a_panel_per_fit_with_its_flags():
    pytest.importorskip("plotly")  # the `report` extra
    from analysis.interactive_figures import joint_residuals_figure

    fig = joint_residuals_figure(ENTRIES, "residuals")
    markers = [t for t in fig.data if t.mode == "markers"]
    assert [list(t.y) for t in markers] == [list(e["residual"]) for e in ENTRIES]
    assert [list(t.x) for t in markers] == [list(e["C"]) for e in ENTRIES]
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:2] == ["all, loss", "mle, loss (E above the lowest loss reached)"]
