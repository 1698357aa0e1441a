"""The static HTML report: ablation, entropy, scaling and search on one page with PNG figures,
and every table also written as Markdown, CSV and LaTeX. Everything is referenced by relative path
and styled inline, so the folder can be copied anywhere and opened offline."""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from pathlib import Path

from analysis import figures
from analysis.ablation import ablation
from analysis.arms import Arms, assign_arms
from analysis.curves import metric_curves
from analysis.entropy import entropy
from analysis.metric_names import DECOMPOSITION_LEAVES, splits
from analysis.scaling import scaling
from analysis.search import search
from analysis.selection import FINAL, ValueSpec
from analysis.store import CURVE_STATUSES, Store, current_trials, metric_names
from analysis.table import Result, table_csv, table_html, table_latex, table_markdown

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
    """Write every table of `result` as .md/.csv/.tex; return name -> relative file paths."""
    files = {}
    for t in result.tables:
        paths = []
        for ext, text in (
            ("md", f"{t.title}\n\n{table_markdown(t)}\n"),
            ("csv", table_csv(t)),
            ("tex", table_latex(t) + "\n"),
        ):
            path = tables_dir / f"{t.name}.{ext}"
            path.write_text(text, encoding="utf-8")
            paths.append(f"tables/{path.name}")
        files[t.name] = paths
    return files


def _section(result: Result, files: dict[str, list[str]], images: Sequence[tuple[str, str]]) -> str:
    parts = [f"<h2>{html.escape(result.title)}</h2>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in result.header]
    for src, alt in images:
        parts.append(f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">')
    for t in result.tables:
        links = " · ".join(
            f'<a href="{html.escape(p)}">{p.rsplit(".", 1)[1]}</a>' for p in files.get(t.name, [])
        )
        parts.append(f"<h3>{html.escape(t.title)}</h3>")
        parts.append(f'<div class="scroll">{table_html(t)}</div>')
        parts.append(f'<p class="files">files: {links}</p>')
    notes = result.all_notes()
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        parts.append(f'<div class="notes"><b>Notes</b><ul>{items}</ul></div>')
    if not result.tables:
        parts.append("<p><i>No table: the data do not support one yet (see the notes).</i></p>")
    return "\n".join(parts)


def _loss_of(arms: Arms) -> dict[str, str]:
    return {a: str(v.get("loss", a)) for a, v in arms.key_values.items()}


def _curve_title(what: str, arms: Arms) -> str:
    if len(arms.order) > figures.MAX_LEGEND:
        return f"{what}: {len(arms.order)} arms, mean over seeds, coloured by loss"
    return f"{what}: per arm, mean over seeds (band: 95% CI)"


def write_report(
    store: Store,
    out: str | Path,
    *,
    objectives: Sequence[str] = (),
    params: str = "non_embedding",
    n_boot: int = 2000,
    value: ValueSpec = FINAL,
    statuses: Sequence[str] | None = None,
) -> Path:
    """Write `out`/index.html, `out`/figures/*.png and `out`/tables/*.{md,csv,tex}; return the
    page's path."""
    out = Path(out)
    fig_dir, tables_dir = out / "figures", out / "tables"
    fig_dir.mkdir(parents=True, exist_ok=True)
    tables_dir.mkdir(parents=True, exist_ok=True)
    status_kw = {"statuses": list(statuses)} if statuses else {}
    sections = []

    # Ablation, with learning curves per arm (running trials included: their steps so far).
    abl = ablation(store, **status_kw)
    curve_trials, _ = current_trials(store, statuses or CURVE_STATUSES)
    available = metric_names(store)
    images = []
    if curve_trials.height:
        arms = assign_arms(curve_trials)
        learning = [
            m
            for m in ["train/loss", *(f"eval/{s}/ce" for s in splits(available))]
            if m in available
        ]
        if learning:
            curves, _ = metric_curves(store, arms, learning)
            if curves:
                figures.plot_curves(
                    curves,
                    learning,
                    arms.order,
                    fig_dir / "learning_curves.png",
                    _curve_title("learning curves", arms),
                    family=_loss_of(arms),
                )
                images.append(("figures/learning_curves.png", "learning curves per arm"))
    sections.append(_section(abl, _write_tables(abl, tables_dir), images))

    ent = entropy(store, statuses=statuses)
    images = []
    if curve_trials.height:
        arms = assign_arms(curve_trials)
        for split in splits(available):
            names = [f"eval/{split}/digit_entropy", f"eval/{split}/digit_acc"]
            names = [n for n in names if n in available]
            if not names:
                continue
            curves, _ = metric_curves(store, arms, names)
            if curves:
                path = fig_dir / f"entropy_{split}.png"
                figures.plot_curves(
                    curves,
                    names,
                    arms.order,
                    path,
                    _curve_title(f"digit entropy and accuracy over training, split {split}", arms),
                    family=_loss_of(arms),
                )
                images.append((f"figures/{path.name}", f"entropy curves, split {split}"))
    sections.append(_section(ent, _write_tables(ent, tables_dir), images))

    sca = scaling(store, params=params, value=value, n_boot=n_boot, **status_kw)
    images = []
    entries = sca.figure_data.get("scaling", [])
    for split in dict.fromkeys(e["split"] for e in entries):
        mine = [e for e in entries if e["split"] == split]
        if not any(e["fit"] is not None for e in mine):
            continue
        path = fig_dir / f"scaling_{split}.png"
        figures.plot_scaling(
            mine,
            DECOMPOSITION_LEAVES,
            path,
            f"log-log scaling with fitted power laws, split {split}",
        )
        images.append((f"figures/{path.name}", f"scaling plots, split {split}"))
    sections.append(_section(sca, _write_tables(sca, tables_dir), images))

    sea = search(store, objectives=objectives, value=value, **status_kw)
    images = []
    pareto = sea.figure_data.get("pareto")
    if pareto is not None:
        figures.plot_pareto(
            pareto["points"], pareto["front"], pareto["objectives"], fig_dir / "pareto.png"
        )
        images.append(("figures/pareto.png", "Pareto front"))
    elif not sea.tables or len(objectives) < 2:
        sea.notes.append("one objective: no Pareto front (give --objective twice for one)")
    sections.append(_section(sea, _write_tables(sea, tables_dir), images))

    experiments = html.escape(", ".join(store.experiments))
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>numsweep analysis: {html.escape(", ".join(store.experiments))}</title>
<style>{_STYLE}</style></head>
<body>
<h1>numsweep analysis</h1>
<p>results: {html.escape(str(store.root))} · experiments: {experiments} · written {stamp}</p>
{chr(10).join(sections)}
</body></html>
"""
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
