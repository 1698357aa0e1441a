"""The report's sections, each built by one function of the report's context (`SECTIONS`, in page
order; the summary that leads the page is made from what each gives it). A section that needs
another command's result gets it through `analysis.commands.call`, the library face, never by
importing that command's module. A new section is a function here and a line in `SECTIONS`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.ablation_options import PairedOptions
from analysis.arm_curves import Curve, metric_curves, seeds_per_arm, tokens_at_steps
from analysis.arms import Arms
from analysis.commands import COMMANDS, call
from analysis.cost_panel import cost_panel
from analysis.figures import MAX_LEGEND
from analysis.report_figures import Figure, InteractiveFigures, StaticFigures
from analysis.report_page import Section, write_tables
from analysis.result import Result, Table
from analysis.selection import FINAL
from analysis.trial_costs import cost_lines, trial_costs
from records.metric_names import DECOMPOSITION_LEAVES, splits
from records.reader import Store

MIN_FIT_SIZES = 3
"""Distinct model sizes a scaling fit needs (what `analysis.scaling` fits at least)."""


@dataclass
class ReportContext:
    """What every section builder reads: the store, the report's options, how figures are
    drawn, where table files go, and the results of the commands run so far."""

    store: Store
    settings: Any
    """The report's ReportSettings."""
    figures: StaticFigures | InteractiveFigures
    tables_dir: Path
    available: list[str]
    curve_arms: Arms | None
    """The arms of the trials drawn over training (finished and running), labels with the
    sampled parameters."""
    files: dict[str, list[str]] = field(default_factory=dict)
    results: dict[str, Result] = field(default_factory=dict)
    summary_lines: list[str] = field(default_factory=list)

    @property
    def status_kw(self) -> dict[str, Any]:
        statuses = self.settings.statuses
        return {"statuses": tuple(statuses)} if statuses else {}

    def run(self, command: str, **options: Any) -> Result:
        """`command` with `options` on this report's store, through the library face; its
        tables written as files."""
        settings = COMMANDS[command].load("settings")(**options)
        result = call(settings, str(self.store.root), self.store.experiments)
        assert isinstance(result, Result)
        say_one_seed(result)
        self.results[command] = result
        self.files.update(write_tables(result, self.tables_dir))
        return result


CI_CLAIM = re.compile(r"mean ± (?:[0-9.]+% )?CI over seeds(?: \(t distribution\))?")
"""What a table's title or a header line promises: a mean and its interval over seeds."""
ONE_SEED = "the value of one seed (one seed: no interval)"


def _seed_counts(t: Table) -> list[int] | None:
    """The table's `seeds` column as numbers; None without one."""
    if "seeds" not in t.columns or not t.rows:
        return None
    k = t.columns.index("seeds")
    try:
        return [int(row[k]) for row in t.rows]
    except ValueError:
        return None


def say_one_seed(result: Result) -> None:
    """Where every arm of a table has one seed, its title says so instead of promising a mean
    and an interval over seeds (the cells are one trial's values); where every table of
    `result` is so, its header lines too. Mixed tables keep the title: their notes name the
    arms of one seed."""
    counts: list[int] = []
    for t in result.tables:
        seeds = _seed_counts(t)
        if seeds is None:
            continue
        counts += seeds
        if max(seeds) <= 1:
            t.title = CI_CLAIM.sub(ONE_SEED, t.title)
    if counts and max(counts) <= 1:
        result.header = [CI_CLAIM.sub(ONE_SEED, line) for line in result.header]


def _loss_of(arms: Arms) -> dict[str, str]:
    return {a: str(v.get("loss", a)) for a, v in arms.key_values.items()}


def curve_title(what: str, curves: dict[str, dict[str, Curve]], level: float) -> str:
    """A curves figure's title: what the line and the band are, as the seeds allow."""
    seeds = seeds_per_arm(curves)
    arms = len(seeds)
    fewest, most = min(seeds.values(), default=0), max(seeds.values(), default=0)
    if arms > MAX_LEGEND:
        each = "one seed each" if most <= 1 else "mean over seeds"
        return f"{what}: {arms} arms, {each}, coloured by loss (no bands)"
    ci = f"{level * 100:g}% t-interval of the mean"
    if most <= 1:
        return f"{what}: one seed per arm, each line one trial (no band)"
    if fewest >= 2:
        n = f"{fewest}" if fewest == most else f"{fewest}–{most}"
        return f"{what}: mean over {n} seeds per arm; band: {ci}"
    return f"{what}: mean over seeds; band: {ci} where an arm has ≥ 2 seeds (one seed: no band)"


def _curves_figure(
    ctx: ReportContext, name: str, alt: str, metrics: Sequence[str], what: str
) -> Figure | None:
    """One curves figure of `metrics` per arm over training; None without data."""
    arms = ctx.curve_arms
    if arms is None:
        return None
    curves, _ = metric_curves(ctx.store, arms, metrics, ctx.settings.level)
    if not curves:
        return None
    tokens = tokens_at_steps(ctx.store, arms, curves) if ctx.figures.interactive else None
    title = curve_title(what, curves, ctx.settings.level)
    shown = [m for m in metrics if m in curves]
    return ctx.figures.curves(name, alt, curves, shown, arms.order, title, _loss_of(arms), tokens)


LEARNING_NOTE = (
    "train/ce, not train/loss: train/loss adds each loss's own term (α times a digit term, a "
    "KL term, …), so it differs between losses by construction; train/ce is the same "
    "cross-entropy for every loss"
)


def curves_section(ctx: ReportContext) -> Section | None:
    """Learning curves: training CE and each split's held-out CE per arm."""
    metrics = [m for m in ["train/ce", *(f"eval/{s}/ce" for s in splits(ctx.available))]]
    metrics = [m for m in metrics if m in ctx.available]
    if not metrics:
        return None
    fig = _curves_figure(
        ctx, "learning_curves", "learning curves per arm", metrics, "learning curves"
    )
    if fig is None:
        return None
    section = Section("learning-curves", "Learning curves", blocks=[fig])
    if "train/ce" in metrics:
        section.notes.append(LEARNING_NOTE)
    if ctx.figures.interactive:
        section.notes.append(
            "hover for values and seeds; drag to zoom, double-click to reset; click a legend "
            "entry to hide an arm, double-click to show it alone; the mode bar saves a PNG"
        )
    return section


def _without_costs(ctx: ReportContext, header: Sequence[str]) -> list[str]:
    """`header` less the cost lines (they are the cost panel's)."""
    arms = ctx.curve_arms
    labels = {} if arms is None else dict(arms.members.select("trial_id", "arm").iter_rows())
    costs = cost_lines(trial_costs(ctx.store), labels, () if arms is None else arms.order)
    costs += cost_lines(trial_costs(ctx.store))
    return [line for line in header if line not in costs]


def ablation_section(ctx: ReportContext) -> Section:
    """The ablation: its means per split in the summary, its paired tests here."""
    s = ctx.settings
    options = PairedOptions(plateau="") if s.plateau else PairedOptions()
    abl = ctx.run("ablation", level=s.level, options=options, **ctx.status_kw)
    section = Section("ablation", abl.title)
    ctx.summary_lines += _without_costs(ctx, abl.header)
    headline = [t.name for t in abl.tables if t.show and not t.name.endswith("_vs_baseline")]
    section.summary += [_table(ctx, abl, name) for name in headline]
    section.add_tables(abl, ctx.files, skip=headline, elsewhere="means per split, in the summary")
    return section


def _table(ctx: ReportContext, result: Result, name: str) -> str:
    from analysis.report_page import table_block

    return table_block(next(t for t in result.tables if t.name == name), ctx.files)


def entropy_section(ctx: ReportContext) -> Section:
    """Digit entropy and accuracy over training, per split (the first in the summary)."""
    ent = ctx.run("entropy", level=ctx.settings.level, statuses=ctx.settings.statuses)
    section = Section("entropy", ent.title, header=_without_costs(ctx, ent.header))
    for split in splits(ctx.available):
        names = [f"eval/{split}/digit_entropy", f"eval/{split}/digit_acc"]
        names = [n for n in names if n in ctx.available]
        what = f"digit entropy and accuracy over training, split {split}"
        fig = (
            _curves_figure(ctx, f"entropy_{split}", f"entropy curves, split {split}", names, what)
            if names
            else None
        )
        if fig is not None:
            section.blocks.append(fig)
            if not section.key_figures:
                section.key_figures.append(fig)
    section.add_tables(ent, ctx.files)
    return section


def _sizes(sca: Result) -> int:
    """The most distinct model sizes any scaling line of `sca` has."""
    entries = sca.figure_data.get("scaling", [])
    return max((len(set(map(float, e["n"]))) for e in entries), default=0)


OTHER = "other"
"""The split of a fitted metric that names none (a points table's loss column)."""


def scaling_figures(figures: StaticFigures | InteractiveFigures, sca: Result) -> list[Figure]:
    """One log-log figure per split and axis (CE, EE, SA, log-confidence, or the metrics
    fitted), the compute-optimal frontier of a joint fit and where it misses (its residuals),
    and EE's share of CE against size."""
    out = []
    entries = sca.figure_data.get("scaling", [])

    def split_of(metric: str) -> str:
        parts = metric.split("/")
        return parts[1] if parts[0] == "eval" and len(parts) >= 3 else OTHER

    for split, axis in dict.fromkeys((split_of(e["metric"]), e["axis"]) for e in entries):
        mine = [e for e in entries if split_of(e["metric"]) == split and e["axis"] == axis]
        if not any(e["plain"] is not None for e in mine):
            continue
        names = list(dict.fromkeys(e["metric"] for e in mine))
        leaves = [f"eval/{split}/{leaf}" for leaf in DECOMPOSITION_LEAVES]
        names = [m for m in leaves if m in names] + [m for m in names if m not in leaves]
        # metrics that are not an evaluation split's (a points table's loss): no split to name
        where = "" if split == OTHER else f", split {split}"
        name = "scaling" + ("" if split == OTHER else f"_{split}")
        name += "" if axis == "N" else f"_{axis}"
        title = f"log-log scaling against {axis}{where}"
        out.append(figures.scaling(name, f"scaling against {axis}{where}", mine, names[:6], title))
    frontier = sca.figure_data.get("frontier", [])
    if frontier:
        title = "compute-optimal frontier of the joint fit L(N, D)"
        out.append(figures.frontier("frontier", "compute-optimal frontier", frontier, title))
    residuals = sca.figure_data.get("joint_residuals", [])
    if residuals:
        title = "where the joint fit L(N, D) misses: log residuals against compute"
        out.append(figures.residuals("joint_residuals", "joint fit residuals", residuals, title))
    compared = sca.figure_data.get("loss_comparison", [])
    if compared:
        title = f"losses against {compared[0]['reference']} across scale: fits and multipliers"
        out.append(figures.comparison("loss_comparison", "losses compared", compared, title))
    shares = sca.figure_data.get("ee_share", [])
    if shares:
        title = "error entropy's share of CE against size"
        out.append(figures.share("ee_share", "EE share of CE against size", shares, title))
    return out


def scaling_section(ctx: ReportContext) -> Section:
    """Scaling fits, their figures and the verdict (in the summary); one line below 3 sizes."""
    s = ctx.settings
    sca = ctx.run(
        "scaling",
        params=s.params,
        value=FINAL,
        n_boot=s.n_boot,
        level=s.level,
        reference=s.reference,
        compare_at=s.compare_at,
        **ctx.status_kw,
    )
    sizes = _sizes(sca)
    section = Section("scaling", sca.title)
    if sizes < MIN_FIT_SIZES:
        section.header.append(
            f"Scaling: fewer than {MIN_FIT_SIZES} sizes ({sizes}): no fit, no verdict and no "
            f"figure. A scaling fit needs {MIN_FIT_SIZES} or more distinct model sizes (a grid "
            "over grid.presets)."
        )
        return section
    section.header += _without_costs(ctx, sca.header)
    figs = scaling_figures(ctx.figures, sca)
    section.blocks += figs
    section.key_figures += [f for f in figs[:1] if f.name.startswith("scaling_")]
    section.key_figures += [f for f in figs if f.name == "ee_share"]
    verdict = [t.name for t in sca.tables if t.name == "scaling_verdict"]
    section.summary += [_table(ctx, sca, name) for name in verdict]
    section.add_tables(sca, ctx.files, skip=verdict, elsewhere="in the summary")
    return section


def search_section(ctx: ReportContext) -> Section:
    """Best trials by the sweep's objective (or those given), importance, the Pareto front, and
    (interactive) the optimisation history, slices and parallel coordinates."""
    s = ctx.settings
    sea = ctx.run("search", objectives=s.objectives, value=FINAL, **ctx.status_kw)
    section = Section("search", sea.title, header=_without_costs(ctx, sea.header))
    pareto = sea.figure_data.get("pareto")
    if pareto is not None:
        section.blocks.append(ctx.figures.pareto("pareto", "Pareto front", pareto))
    elif sea.tables and len(s.objectives) < 2:
        sea.notes.append("one objective: no Pareto front (give --objective twice for one)")
    history = sea.figure_data.get("trials")
    if history is not None and len(history["trial_id"]) >= 2:
        section.blocks += ctx.figures.search(history)
    best = next((t for t in sea.tables if t.name == "search_best"), None)
    if best is not None and best.data is not None and best.data.height:
        section.summary.append(_best_line(ctx, sea, best.data.row(0, named=True)))
    section.add_tables(sea, ctx.files)
    return section


def _best_line(ctx: ReportContext, sea: Result, best: dict[str, Any]) -> str:
    """The summary's line on the best trial, named by its arm."""
    chosen = sea.figure_data["objectives"]
    label, source = chosen["labels"][0], chosen["source"]
    arms = ctx.curve_arms
    labels = {} if arms is None else dict(arms.members.select("trial_id", "arm").iter_rows())
    metric = label.rsplit(" (", 1)[0]
    arm = labels.get(best["trial_id"], best.get("loss", "?"))
    return (
        f"<p>best trial by {html.escape(label)} ({html.escape(source)} objective): "
        f"<b>{html.escape(str(best['trial_id']))}</b> ({html.escape(str(arm))}), "
        f'{best[metric]:.4g} (<a href="#search">search</a>)</p>'
    )


def cost_section(ctx: ReportContext) -> Section | None:
    """What each arm's trials cost and how fast they ran: a table and (interactive) bars."""
    if ctx.curve_arms is None:
        return None
    cost = cost_panel(ctx.store, ctx.curve_arms)
    ctx.results["cost"] = cost
    if not cost.tables:
        return None
    ctx.files.update(write_tables(cost, ctx.tables_dir))
    section = Section("cost", "Cost")
    data = cost.tables[0].data
    assert data is not None
    fig = ctx.figures.costs(data.filter(data["arm"] != "all"))
    if fig is not None:
        section.blocks.append(fig)
    total = cost_lines(trial_costs(ctx.store))
    if total:
        section.summary.append(f'<p>{html.escape(total[0])} (<a href="#cost">per arm</a>)</p>')
    section.add_tables(cost, ctx.files)
    return section


SectionBuilder = Callable[[ReportContext], Section | None]
SECTIONS: tuple[SectionBuilder, ...] = (
    curves_section,
    ablation_section,
    entropy_section,
    scaling_section,
    search_section,
    cost_section,
)
"""The report's sections in page order (the summary comes first, made from them)."""
