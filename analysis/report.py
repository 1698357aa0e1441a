"""The static HTML report: a short summary first (the headline ablation tables, the key figures,
the scaling verdict), then ablation, entropy, scaling and search in full with PNG figures; every
table also written as Markdown, CSV and LaTeX, and every command's result as JSON. Everything is
referenced by relative path and styled inline, so the folder can be copied anywhere and opened
offline.

Each figure appears once: the summary's key figures are linked, not drawn again, from their
sections. With fewer model sizes than a scaling fit needs, the scaling section is one line that
says so (no verdict table of empty rows, no one-size figures)."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis import figures
from analysis.ablation_options import PairedOptions
from analysis.arm_curves import metric_curves
from analysis.arms import Arms, assign_arms
from analysis.command_start import freeze_lists
from analysis.commands import function_of, option_of, settings_of
from analysis.result import (
    Result,
    Table,
    result_json,
    table_csv,
    table_html,
    table_latex,
    table_markdown,
)
from analysis.scaling.points import PARAM_METRICS
from analysis.seed_stats import check_level
from analysis.selection import FINAL
from analysis.settings_flags import METRICS_FLAG, STATUS_FLAG, flag
from records.errors import ResultsError
from records.metric_names import DECOMPOSITION_LEAVES, splits
from records.reader import CURVE_STATUSES, Store, current_trials, metric_names

# The commands the report shows, reached through the analysis library by name: no command module
# imports another (analysis/commands.py).
AblationSettings, ablation = settings_of("ablation"), function_of("ablation")
EntropySettings, entropy = settings_of("entropy"), function_of("entropy")
SearchSettings, search = settings_of("search"), function_of("search")
scaling = function_of("scaling")
BUDGETS_FLAG = option_of("scaling", "budgets")

_STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; font-size: 0.82em; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; white-space: nowrap; }
th { background: #f2f2f2; } .scroll { overflow-x: auto; max-height: 32em; overflow-y: auto; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; display: block; }
.notes { font-size: 0.85em; color: #444; } .files { font-size: 0.8em; color: #666; }
"""


def _write_tables(result: Result, tables_dir: Path) -> dict[str, list[str]]:
    """Write every table of `result` as .md/.csv/.tex (numbers-only tables as .csv) and the whole
    result as `<command>.json`; return table name -> relative file paths."""
    files = {}
    for t in result.tables:
        paths = []
        texts = [("csv", table_csv(t))]
        if t.show:
            texts = [("md", f"{t.title}\n\n{table_markdown(t)}\n"), *texts]
            texts.append(("tex", table_latex(t) + "\n"))
        for ext, text in texts:
            path = tables_dir / f"{t.name}.{ext}"
            path.write_text(text, encoding="utf-8")
            paths.append(f"tables/{path.name}")
        files[t.name] = paths
    path = tables_dir / f"{result.command}.json"
    path.write_text(result_json(result), encoding="utf-8")
    files[f"{result.command}.json"] = [f"tables/{path.name}"]
    return files


def _table_block(t: Table, files: dict[str, list[str]]) -> list[str]:
    links = " · ".join(
        f'<a href="{html.escape(p)}">{p.rsplit(".", 1)[1]}</a>' for p in files.get(t.name, [])
    )
    return [
        f"<h3>{html.escape(t.title)}</h3>",
        f'<div class="scroll">{table_html(t)}</div>',
        f'<p class="files">files: {links}</p>',
    ]


def _section(
    result: Result,
    files: dict[str, list[str]],
    images: Sequence[tuple[str, str]],
    in_summary: Sequence[tuple[str, str]] = (),
) -> str:
    parts = [f"<h2>{html.escape(result.title)}</h2>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in result.header]
    for src, alt in images:
        if (src, alt) in in_summary:
            parts.append(
                f'<p class="files">figure {html.escape(alt)}: in the <a href="#summary">'
                f'summary</a> (<a href="{html.escape(src)}">{html.escape(src)}</a>)</p>'
            )
        else:
            parts.append(f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">')
    for t in result.tables:
        if t.show:
            parts += _table_block(t, files)
    hidden = [t for t in result.tables if not t.show]
    if hidden:
        links = " · ".join(
            f'<a href="{html.escape(p)}">{html.escape(t.name)}</a>'
            for t in hidden
            for p in files.get(t.name, [])
        )
        parts.append(f'<p class="files">numbers only: {links}</p>')
    json_file = files.get(f"{result.command}.json")
    if json_file:
        parts.append(
            f'<p class="files">everything above as JSON: '
            f'<a href="{html.escape(json_file[0])}">{html.escape(json_file[0])}</a></p>'
        )
    notes = result.all_notes()
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        parts.append(f'<div class="notes"><b>Notes</b><ul>{items}</ul></div>')
    if not result.tables:
        parts.append("<p><i>No table: the data do not support one yet (see the notes).</i></p>")
    return "\n".join(parts)


def _loss_of(arms: Arms) -> dict[str, str]:
    return {a: str(v.get("loss", a)) for a, v in arms.key_values.items()}


def _curve_title(what: str, arms: Arms, level: float) -> str:
    if len(arms.order) > figures.MAX_LEGEND:
        return f"{what}: {len(arms.order)} arms, mean over seeds, coloured by loss"
    return f"{what}: per arm, mean over seeds (band: {level * 100:g}% CI)"


def _summary(
    abl: Result,
    sca: Result | None,
    files: dict[str, list[str]],
    images: Sequence[tuple[str, str]],
) -> str:
    """The page's first section: the headline tables, the key figures and the scaling verdict,
    each also in its own section below."""
    parts = ['<h2 id="summary">Summary</h2>']
    parts += [f"<p>{html.escape(line)}</p>" for line in abl.header]
    for t in abl.tables:
        if not t.name.endswith("_vs_baseline"):
            parts += _table_block(t, files)
    for src, alt in images:
        parts.append(f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">')
    for t in sca.tables if sca is not None else []:
        if t.name == "scaling_verdict":
            parts += _table_block(t, files)
    if len(parts) == 1 + len(abl.header):
        parts.append("<p><i>Nothing to summarise yet: see the sections below.</i></p>")
    parts.append("<p>Details, notes and every other table follow.</p>")
    return "\n".join(parts)


MIN_FIT_SIZES = 3
"""Distinct model sizes a scaling fit needs (what `analysis.scaling` fits at least)."""


def _sizes(sca: Result) -> int:
    """The most distinct model sizes any scaling line of `sca` has."""
    entries = sca.figure_data.get("scaling", [])
    return max((len(set(map(float, e["n"]))) for e in entries), default=0)


def _too_few_sizes(sca: Result, sizes: int) -> str:
    """The scaling section of a store with fewer sizes than a fit needs: one line."""
    return (
        f"<h2>{html.escape(sca.title)}</h2>\n<p>Scaling: fewer than {MIN_FIT_SIZES} sizes "
        f"({sizes}): no fit, no verdict and no figure. A scaling fit needs {MIN_FIT_SIZES} or "
        "more distinct model sizes (a grid over <code>grid.presets</code>).</p>"
    )


def _scaling_figures(sca: Result, fig_dir: Path) -> list[tuple[str, str]]:
    """One log-log figure per split and axis (CE, EE, SA, log-confidence, or the metrics fitted),
    and EE's share of CE against size."""
    images = []
    entries = sca.figure_data.get("scaling", [])

    def split_of(metric: str) -> str:
        parts = metric.split("/")
        return parts[1] if parts[0] == "eval" and len(parts) >= 3 else "other"

    for split, axis in dict.fromkeys((split_of(e["metric"]), e["axis"]) for e in entries):
        mine = [e for e in entries if split_of(e["metric"]) == split and e["axis"] == axis]
        if not any(e["plain"] is not None for e in mine):
            continue
        names = list(dict.fromkeys(e["metric"] for e in mine))
        leaves = [f"eval/{split}/{leaf}" for leaf in DECOMPOSITION_LEAVES]
        names = [m for m in leaves if m in names] + [m for m in names if m not in leaves]
        suffix = "" if axis == "N" else f"_{axis}"
        path = fig_dir / f"scaling_{split}{suffix}.png"
        figures.plot_scaling(
            mine, names[:6], path, f"log-log scaling against {axis}, split {split}"
        )
        images.append((f"figures/{path.name}", f"scaling against {axis}, split {split}"))
    frontier = sca.figure_data.get("frontier", [])
    if frontier:
        path = fig_dir / "frontier.png"
        figures.plot_frontier(frontier, path, "compute-optimal frontier of the joint fit L(N, D)")
        images.append((f"figures/{path.name}", "compute-optimal frontier"))
    shares = sca.figure_data.get("ee_share", [])
    if shares:
        path = fig_dir / "ee_share.png"
        figures.plot_share(shares, path, "error entropy's share of CE against size")
        images.append((f"figures/{path.name}", "EE share of CE against size"))
    return images


def _learning_curves(
    store: Store, arms: Arms, available: Sequence[str], level: float, fig_dir: Path
) -> list[tuple[str, str]]:
    """The ablation section's figure: the training loss and each split's CE over training, per
    arm; none without those metrics."""
    learning = [
        m for m in ["train/loss", *(f"eval/{s}/ce" for s in splits(available))] if m in available
    ]
    if not learning:
        return []
    curves, _ = metric_curves(store, arms, learning, level)
    if not curves:
        return []
    figures.plot_curves(
        curves,
        learning,
        arms.order,
        fig_dir / "learning_curves.png",
        _curve_title("learning curves", arms, level),
        family=_loss_of(arms),
    )
    return [("figures/learning_curves.png", "learning curves per arm")]


def _entropy_curves(
    store: Store, arms: Arms, available: Sequence[str], level: float, fig_dir: Path
) -> list[tuple[str, str]]:
    """The entropy section's figures: digit entropy and digit accuracy over training per arm,
    one figure per split that has either."""
    images = []
    for split in splits(available):
        names = [f"eval/{split}/digit_entropy", f"eval/{split}/digit_acc"]
        names = [n for n in names if n in available]
        if not names:
            continue
        curves, _ = metric_curves(store, arms, names, level)
        if curves:
            path = fig_dir / f"entropy_{split}.png"
            figures.plot_curves(
                curves,
                names,
                arms.order,
                path,
                _curve_title(
                    f"digit entropy and accuracy over training, split {split}", arms, level
                ),
                family=_loss_of(arms),
            )
            images.append((f"figures/{path.name}", f"entropy curves, split {split}"))
    return images


def _search_figures(sea: Result, objectives: Sequence[str], fig_dir: Path) -> list[tuple[str, str]]:
    """The search section's figure: the Pareto plot when there is a front; else, for one
    objective, a note on `sea` saying how to get one."""
    pareto = sea.figure_data.get("pareto")
    if pareto is not None:
        figures.plot_pareto(
            pareto["points"], pareto["front"], pareto["objectives"], fig_dir / "pareto.png"
        )
        return [("figures/pareto.png", "Pareto front")]
    if not sea.tables or len(objectives) < 2:
        sea.notes.append("one objective: no Pareto front (give --objective twice for one)")
    return []


def _page(store: Store | None, sections: Sequence[str], points: str | None = None) -> str:
    """The whole HTML page around its sections (of a store, or of a `points` table)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    if store is not None:
        name = html.escape(", ".join(store.experiments))
        source = f"results: {html.escape(str(store.root))} · experiments: {name}"
    else:
        name = html.escape(Path(str(points)).name)
        source = f"points: {html.escape(str(points))}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>numsweep analysis: {name}</title>
<style>{_STYLE}</style></head>
<body>
<h1>numsweep analysis</h1>
<p>{source} · written {stamp}</p>
{chr(10).join(sections)}
</body></html>
"""


def write_points_report(sca: Result, points: str | Path, out: str | Path) -> Path:
    """The report of a points table (`analysis report --points FILE`): its scaling section
    alone, with figures (each axis's fits, the compute-optimal frontier) and table files."""
    out = Path(out)
    fig_dir, tables_dir = out / "figures", out / "tables"
    fig_dir.mkdir(parents=True, exist_ok=True)
    tables_dir.mkdir(parents=True, exist_ok=True)
    images = _scaling_figures(sca, fig_dir)
    files = _write_tables(sca, tables_dir)
    index = out / "index.html"
    index.write_text(_page(None, [_section(sca, files, images)], str(points)), encoding="utf-8")
    return index


@dataclass(frozen=True)
class ReportSettings:
    """Options of the report command (`python -m analysis report --help` names each flag). A
    store's report uses the first seven; a points table's (--points) the output directory,
    --metrics, --bootstrap, --fit-bootstrap, --budgets and --level."""

    out: str | Path = field(metadata=flag("-o", "--out", metavar="DIR"))
    """Output directory: index.html, figures/ and tables/ (-o)."""
    objectives: tuple[str, ...] = field(default=(), metadata=flag("--objective"))
    """The search section's objective(s), as for the search command (--objective)."""
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

    def __post_init__(self) -> None:
        freeze_lists(self, ("objectives", "statuses", "metrics", "budgets"))
        check_level(self.level)
        if self.n_boot < 1:
            raise ResultsError(f"--bootstrap must be >= 1, got {self.n_boot}")


def write_report(store: Store, settings: ReportSettings) -> Path:
    """Write OUT/index.html, OUT/figures/*.png and OUT/tables/*.{md,csv,tex,json}; return the
    page's path. With `plateau`, the ablation section flags arms still learning (†) and has the
    plateau table (analysis/plateau.py)."""
    s = settings
    out, statuses, level, value = Path(s.out), s.statuses, s.level, FINAL
    fig_dir, tables_dir = out / "figures", out / "tables"
    fig_dir.mkdir(parents=True, exist_ok=True)
    tables_dir.mkdir(parents=True, exist_ok=True)
    status_kw = {"statuses": list(statuses)} if statuses else {}
    files: dict[str, list[str]] = {}

    # Ablation, with learning curves per arm (running trials included: their steps so far).
    options = PairedOptions(plateau="") if s.plateau else PairedOptions()
    abl = ablation(store, AblationSettings(level=level, options=options, **status_kw))
    curve_trials, _ = current_trials(store, statuses or CURVE_STATUSES)
    available = metric_names(store)
    abl_images = []
    if curve_trials.height:
        abl_images = _learning_curves(store, assign_arms(curve_trials), available, level, fig_dir)
    files.update(_write_tables(abl, tables_dir))

    ent = entropy(store, EntropySettings(statuses=statuses, level=level))
    ent_images = []
    if curve_trials.height:
        ent_images = _entropy_curves(store, assign_arms(curve_trials), available, level, fig_dir)
    files.update(_write_tables(ent, tables_dir))

    sca = scaling(store, params=s.params, value=value, n_boot=s.n_boot, level=level, **status_kw)
    sizes = _sizes(sca)
    fitted = sizes >= MIN_FIT_SIZES  # else the scaling part is one line, no empty tables
    sca_images = _scaling_figures(sca, fig_dir) if fitted else []
    if fitted:
        files.update(_write_tables(sca, tables_dir))

    sea = search(store, SearchSettings(objectives=s.objectives, value=value, **status_kw))
    sea_images = _search_figures(sea, s.objectives, fig_dir)
    files.update(_write_tables(sea, tables_dir))

    key_images = ent_images[:1] + sca_images[:1] + [i for i in sca_images if "ee_share" in i[0]]
    sections = [
        _summary(abl, sca if fitted else None, files, key_images),
        _section(abl, files, abl_images, key_images),
        _section(ent, files, ent_images, key_images),
        _section(sca, files, sca_images, key_images) if fitted else _too_few_sizes(sca, sizes),
        _section(sea, files, sea_images, key_images),
    ]
    index = out / "index.html"
    index.write_text(_page(store, sections), encoding="utf-8")
    return index
