"""The HTML report: a summary first (the headline ablation tables, the best trial by the sweep's
objective, the key figures, the scaling verdict, the cost), then each section in full
(`analysis.report_sections.SECTIONS`: learning curves, ablation, entropy, scaling, search, cost),
every table also written as Markdown, CSV and LaTeX and every command's result as JSON.

By default the figures are interactive (plotly, the `report` extra: hover, zoom, legend toggling,
smoothing, steps or tokens on the x-axis, the search's optimisation history, slices and parallel
coordinates, the cost per arm), with plotly's JavaScript written beside the page; `--static`
draws PNGs with matplotlib instead (the committed study reports). Either way everything is
referenced by relative path, so the folder can be copied anywhere and opened offline.

Each figure and table appears once: the summary's are linked, not drawn again, from their
sections. With fewer model sizes than a scaling fit needs, the scaling section is one line that
says so (no verdict table of empty rows, no one-size figures)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from analysis.arms import assign_arms
from analysis.command_start import freeze_lists
from analysis.commands import option_of
from analysis.planned_sizes import check_planned
from analysis.report_figures import figure_writer
from analysis.report_page import (
    Section,
    contents,
    page,
    render_section,
    render_summary,
    write_tables,
)
from analysis.report_sections import SECTIONS, ReportContext, scaling_figures
from analysis.result import Result
from analysis.scaling.points import PARAM_METRICS
from analysis.seed_stats import check_level
from analysis.settings_flags import METRICS_FLAG, STATUS_FLAG, flag
from analysis.sweep_manifest import store_sampled
from records.errors import ResultsError
from records.reader import CURVE_STATUSES, Store, current_trials, metric_names

# The scaling command's --budgets option, by name: no command module imports another's
# (analysis/commands.py).
BUDGETS_FLAG = option_of("scaling", "budgets")
AT_FLAG = option_of("scaling", "compare_at")


def write_points_report(
    sca: Result, points: str | Path, out: str | Path, static: bool = False
) -> Path:
    """The report of a points table (`analysis report --points FILE`): its scaling section
    alone, with figures (each axis's fits, the compute-optimal frontier) and table files."""
    out = Path(out)
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    figures = figure_writer(out, static)
    section = Section("scaling", sca.title, header=list(sca.header))
    section.blocks += scaling_figures(figures, sca)
    section.add_tables(sca, write_tables(sca, tables_dir))
    source = f"points: {html.escape(str(points))}"
    index = out / "index.html"
    body = [render_section(section, set())]
    index.write_text(
        page(source, Path(str(points)).name, body, figures.finish(out)), encoding="utf-8"
    )
    return index


@dataclass(frozen=True)
class ReportSettings:
    """Options of the report command (`python -m analysis report --help` names each flag). A
    store's report uses the first seven, --reference and --at; a points table's (--points) the
    output directory, --metrics, --bootstrap, --fit-bootstrap, --budgets, --level, --reference
    and --at."""

    out: str | Path = field(metadata=flag("-o", "--out", metavar="DIR"))
    """Output directory: index.html, plotly.min.js (or figures/ with --static) and tables/."""
    static: bool = False
    """PNG figures (matplotlib) instead of interactive ones (--static): no JavaScript, no
    plotly needed; what the committed study reports use."""
    objectives: tuple[str, ...] = field(default=(), metadata=flag("--objective"))
    """The search section's objective(s), as for the search command (--objective); none: the
    sweep's own (its manifest's), as `numsweep status` ranks trials."""
    params: str = field(default="non_embedding", metadata=flag(choices=tuple(PARAM_METRICS)))
    """Which parameter count is N in the scaling section (--params): non_embedding or total."""
    n_boot: int = field(default=2000, metadata=flag("--bootstrap"))
    """Bootstrap resamples of the scaling section's intervals (--bootstrap)."""
    plateau: bool = False
    """The plateau check in the ablation section (--plateau): arms still learning are flagged
    (†) and the slope table added."""
    statuses: tuple[str, ...] | None = field(default=None, metadata=STATUS_FLAG)
    """Trial statuses read (--status); None: each section's own (finished trials; the learning
    curves also running ones)."""
    level: float = 0.95
    """Confidence level of every interval (--level)."""
    metrics: tuple[str, ...] | None = field(default=None, metadata=METRICS_FLAG)
    """A points table's metric columns to fit (--metrics); None: loss."""
    n_boot_fit: int | None = field(default=None, metadata=flag("--fit-bootstrap"))
    """A points table's resamples of the fits' intervals (--fit-bootstrap); None: 1,000."""
    budgets: tuple[float, ...] | None = field(default=None, metadata=BUDGETS_FLAG)
    """A points table's compute budgets in FLOPs for the joint fit's compute-optimal N*, D*
    (--budgets); None: the data's largest C and 10× and 100× beyond."""
    reference: str | None = field(default=None, metadata=flag(metavar="VALUE"))
    """The scaling section compares every loss with this one across scale (--reference; a
    points table's --group values): fits with bands and multipliers against N, and the
    comparison's tables; None: no comparison."""
    compare_at: tuple[float, ...] | None = field(default=None, metadata=AT_FLAG)
    """Planned sizes N at which the multipliers against --reference are given too, beside each
    loss's own sizes (--at; diamonds in the figure), as the scaling command's --at."""

    def __post_init__(self) -> None:
        freeze_lists(self, ("objectives", "statuses", "metrics", "budgets", "compare_at"))
        check_level(self.level)
        if self.n_boot < 1:
            raise ResultsError(f"--bootstrap must be >= 1, got {self.n_boot}")
        # Checked here, not when the scaling section runs: before any file is written.
        check_planned(self.compare_at, self.reference)


def write_report(store: Store, settings: ReportSettings) -> Path:
    """Write OUT/index.html, its figures (OUT/plotly.min.js, or OUT/figures/*.png with
    `static`) and OUT/tables/*.{md,csv,tex,json}; return the page's path. With `plateau`, the
    ablation section flags arms still learning (†) and has the plateau table."""
    s = settings
    out = Path(s.out)
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    figures = figure_writer(out, s.static)
    # Curves and costs cover running trials too (their steps so far).
    curve_trials, _ = current_trials(store, s.statuses or CURVE_STATUSES)
    arms = assign_arms(curve_trials, sampled=store_sampled(store)) if curve_trials.height else None
    ctx = ReportContext(store, s, figures, tables_dir, metric_names(store), arms)
    sections = [section for build in SECTIONS if (section := build(ctx)) is not None]
    summary, drawn = render_summary(ctx.summary_lines, sections)
    shown = set(ctx.summary_lines)
    for section in sections:  # what the summary says, no section header repeats
        section.header = [line for line in section.header if line not in shown]
    body = [contents(sections), summary, *(render_section(x, drawn) for x in sections)]
    name = ", ".join(store.experiments)
    source = f"results: {html.escape(str(store.root))} · experiments: {html.escape(name)}"
    index = out / "index.html"
    index.write_text(page(source, name, body, figures.finish(out)), encoding="utf-8")
    return index
