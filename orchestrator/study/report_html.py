"""`numsweep study report --format html -o DIR`: the stopped study's report as a static page,
DIR/index.html, with its tables also written as files under DIR/tables/ (Markdown, CSV, LaTeX and
the whole report as JSON), through analysis's report page (analysis.report_page): the same
tables as the Markdown and JSON reports, so the three cannot disagree.

The page: a summary (the decision and the look that took it, the cost, the registration line);
the primary comparison with its repeated CI; every look's numbers; the secondaries with Holm;
the trial-hours spent against the design's maximum and the fixed design's; the registration
record (its main fields as a table, then in full as JSON). No script, styles inline: the folder
opens offline."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from analysis.report_page import (
    Section,
    contents,
    page,
    render_section,
    render_summary,
    table_block,
    write_tables,
)
from analysis.result import Column, Result, Table, fmt, records_table


def _cost_table(summary: dict[str, Any]) -> Table:
    """Trial-hours and paired seeds: what the study spent, the design's maximum, the fixed
    design's, and the pilot's."""
    design = summary["registration"]["design"]
    rows = [
        {"what": "used (the pairs the decision used)", "seeds": summary["seeds"],
         "hours": summary["hours"]},
        {"what": "stored (every pair in the store)", "seeds": None,
         "hours": summary["stored_hours"]},
        {"what": "the design's maximum", "seeds": design["seeds"][-1],
         "hours": summary["max_hours"]},
        {"what": "the fixed design (one look, same α and power)",
         "seeds": summary["fixed_seeds"], "hours": summary["fixed_hours"]},
        {"what": "pilot", "seeds": summary["registration"]["pilot"].get("seeds"),
         "hours": summary["pilot_hours"]},
    ]  # fmt: skip
    cols = [
        Column("", lambda r: r["what"]),
        Column("paired seeds", lambda r: "—" if r["seeds"] is None else str(r["seeds"])),
        Column("trial-hours", lambda r: fmt(r["hours"], 3)),
    ]
    return records_table("cost", "cost: trial-hours against the fixed design", cols, rows)


def _registration_table(record: dict[str, Any]) -> Table:
    """The registration's main fields (the full record follows as JSON)."""
    design, code = record["design"], record["code"]
    dirty = " (uncommitted changes)" if code["dirty"] else ""
    seq = ", ".join
    rows = [
        ("registered at", record["registered_at"]),
        ("study file hash (sha256)", record["content_hash"]),
        ("code revision", code["git_revision"] + dirty),
        ("looks at (paired seeds)", seq(map(str, design["seeds"]))),
        ("spending", design["spending"]),
        ("α, power", f"{design['alpha']:g}, {design['power']:g}"),
        ("efficacy bound z", seq(fmt(z) for z in design["efficacy_z"])),
        ("efficacy bound t", seq(fmt(t) for t in design["efficacy_t"])),
        ("futility bound t", seq(fmt(t) for t in design["futility_t"] or ()) or "—"),
        ("α spent", seq(fmt(a) for a in design["alpha_spent"])),
        ("sd the design was sized at (paired differences)", fmt(design["sd"])),
    ]
    cols = [Column("field", lambda r: r["field"]), Column("value", lambda r: r["value"])]
    records = [{"field": k, "value": str(v)} for k, v in rows]
    return records_table("registration", "registration record", cols, records)


def _section(anchor: str, title: str, tables: list[Table], files: dict[str, list[str]]) -> Section:
    section = Section(anchor, title)
    section.blocks += [table_block(t, files) for t in tables]
    return section


def write_study_html(result: Result, out: Path) -> Path:
    """Write the study report `result` (orchestrator.study.report.study_report) as OUT/index.html
    and OUT/tables/; return the page's path."""
    summary = result.summary
    tables_dir = out / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    extra = [_cost_table(summary), _registration_table(summary["registration"])]
    files = write_tables(
        Result(result.command, result.title, result.header, [*result.tables, *extra],
               result.notes, settings=result.settings, summary=summary),
        tables_dir,
    )  # fmt: skip
    named = {t.name: t for t in [*result.tables, *extra]}
    full = json.dumps(summary["registration"], indent=2, ensure_ascii=False)
    registration = _section("registration", "Registration", [named["registration"]], files)
    registration.blocks.append(
        f"<details><summary>the full record</summary><pre>{html.escape(full)}</pre></details>"
    )
    mine = ("primary", "secondary")
    looks = _section("looks", "Every look", [t for t in result.tables if t.name not in mine], files)
    looks.notes = result.all_notes()
    sections = [
        _section("primary", "Decision and estimate", [named["primary"]], files),
        looks,
        _section("secondary", "Secondary metrics (Holm)", [named["secondary"]], files)
        if "secondary" in named
        else None,
        _section("cost", "Cost", [named["cost"]], files),
        registration,
    ]
    shown = [s for s in sections if s is not None]
    head, in_summary = render_summary(result.header, shown)
    body = [
        f"<h2>{html.escape(result.title)}</h2>",
        contents(shown),
        head,
        *(render_section(s, in_summary) for s in shown),
    ]
    index = out / "index.html"
    index.write_text(page(html.escape(str(out)), result.title, body), encoding="utf-8")
    return index
