"""What a command produces (tables of formatted cells plus the numbers behind them, and notes for
the reader) and how it is written out: Markdown, CSV, LaTeX, JSON, HTML.

A table of one row per record is built from its records alone (`records_table`: columns, each a
title and a formatter from a record to its display cell), so the numbers (the records, written
as CSV and JSON) and what a reader sees (Markdown, LaTeX) cannot disagree. A wide table of one
record per cell (an arm's row, a column per metric) has its rows laid out by `pivot_rows`, each
cell formatted from its record."""

from __future__ import annotations

import datetime as dt
import html
import io
import json
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

Format = Literal["md", "csv", "latex", "json"]
FORMATS: tuple[str, ...] = ("md", "csv", "latex", "json")
DASH = "—"
"""Shown in a cell that has no number; the notes say why."""


def fmt(x: float | None, digits: int = 4) -> str:
    """A number with `digits` significant digits, or the dash for None; nan and inf as such."""
    if x is None:
        return DASH
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def fmt_signed(x: float | None, digits: int = 4) -> str:
    """Like `fmt` with an explicit + on positive numbers (differences)."""
    text = fmt(x, digits)
    return "+" + text if x is not None and x > 0 and not math.isinf(x) else text


def fmt_pm(mean: float, half: float | None) -> str:
    """ "mean ± half" (or just the mean when there is no interval)."""
    return fmt(mean) if half is None else f"{fmt(mean)} ± {fmt(half, 2)}"


def fmt_pvalue(p: float | None) -> str:
    """A p-value as "0.0321" (three significant digits), "<1e-4" below that."""
    if p is None:
        return DASH
    return "<1e-4" if p < 1e-4 else f"{p:.3g}"


def fmt_p(p: float | None) -> str:
    """A p-value as "p=0.0321", "p<1e-4" below 1e-4."""
    text = fmt_pvalue(p)
    return "p" + text if text.startswith("<") else "p=" + text


def fmt_pct(x: float | None, signed: bool = False) -> str:
    """A relative error as a percentage with two significant digits ("1.3%", "+0.42%")."""
    if x is None or not math.isfinite(x):
        return fmt(x)
    if abs(x) >= 10:  # a refit that ran off: the size says all there is to say
        return "<-999%" if x < 0 else ">999%"
    text = f"{100 * x:.2g}%"
    return "+" + text if signed and x > 0 else text


def fmt_ci(low: float | None, high: float | None, digits: int = 3) -> str:
    """ "[low, high]" or the dash."""
    if low is None or high is None:
        return DASH
    return f"[{fmt(low, digits)}, {fmt(high, digits)}]"


@dataclass
class Table:
    """A rendered table. `rows` hold display strings; `marked` holds the (row, column) cells that
    are the best of their column; `data` holds the full-precision numbers (written as CSV)."""

    name: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    marked: set[tuple[int, int]] = field(default_factory=set)
    data: pl.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    show: bool = True
    """False for tables of numbers only (per-size points, say): written as CSV and JSON and as
    report files, left out of Markdown, LaTeX and the report page's text."""


Record = dict[str, Any]


@dataclass(frozen=True)
class Column:
    """One column of a `records_table`: its title and the formatter of its cell from a record."""

    title: str
    cell: Callable[[Record], str]


def records_table(
    name: str,
    title: str,
    columns: Sequence[Column],
    records: list[Record],
    *,
    show: bool = True,
    optional: Sequence[str] = (),
) -> Table:
    """A table of `records`, one row each. A column titled in `optional` is left out when no row
    holds anything in it; every row is left out when `show` is False (numbers only)."""
    rows = [[c.cell(r) for c in columns] for r in records] if show else []
    keep = [
        j for j, c in enumerate(columns) if c.title not in optional or any(row[j] for row in rows)
    ]
    return Table(
        name=name,
        title=title,
        columns=[columns[j].title for j in keep],
        rows=[[row[j] for j in keep] for row in rows],
        show=show,
        data=pl.DataFrame(records, infer_schema_length=None),
    )


def pivot_rows(
    records: Sequence[Record],
    rows: Mapping[Hashable, Sequence[str]],
    columns: Sequence[Hashable],
    at: Callable[[Record], tuple[Hashable, Hashable]],
    cell: Callable[[Record], str],
    *,
    mark: Callable[[Record], bool] | None = None,
    missing: str | Callable[[Hashable, Hashable], str] = DASH,
) -> tuple[list[list[str]], set[tuple[int, int]]]:
    """The display rows of a table of one record per cell, and its marked cells: a row per key
    of `rows` (in order; the value is the row's leading cells), then a cell per key of `columns`,
    formatted by `cell` from the record that `at` places at (row, column), `missing` (a text, or
    one made from the row and column key) where no record is; records of other rows are left
    out. A cell is marked (bold) when `mark` says so of its record."""
    placed = {at(r): r for r in records}
    out: list[list[str]] = []
    marked: set[tuple[int, int]] = set()
    for i, (row, lead) in enumerate(rows.items()):
        cells = list(lead)
        for column in columns:
            record = placed.get((row, column))
            if record is None:
                cells.append(missing(row, column) if callable(missing) else missing)
                continue
            if mark is not None and mark(record):
                marked.add((i, len(cells)))
            cells.append(cell(record))
        out.append(cells)
    return out, marked


@dataclass
class Result:
    """The output of one command: header lines, tables, notes, and (for the report) the series
    behind the figures."""

    command: str
    title: str
    header: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figure_data: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    """The options that shaped the numbers (level, correction and its family, ...), for JSON."""
    summary: dict[str, Any] = field(default_factory=dict)
    """The command's answer as a few top-level JSON keys beside the tables (`sequential`'s
    `upper`, a replay's `decision`), for scripts to read without walking the tables."""

    def all_notes(self) -> list[str]:
        """Result notes then table notes, without repeats."""
        seen: list[str] = []
        for note in [*self.notes, *(n for t in self.tables for n in t.notes)]:
            if note not in seen:
                seen.append(note)
        return seen


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def table_markdown(table: Table) -> str:
    """A GitHub-flavoured Markdown table; best cells in bold."""
    lines = [
        "| " + " | ".join(_md_escape(c) for c in table.columns) + " |",
        "|" + "|".join("---" for _ in table.columns) + "|",
    ]
    for i, row in enumerate(table.rows):
        cells = [
            f"**{_md_escape(c)}**" if (i, j) in table.marked else _md_escape(c)
            for j, c in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "—": "---",
    "η": r"$\eta$",
    "²": r"$^2$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "−": "-",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX specials and map the few non-ASCII symbols the tables use."""
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def table_latex(table: Table) -> str:
    """A booktabs tabular; best cells in bold."""
    spec = "l" * len(table.columns)
    lines = [
        f"% {latex_escape(table.title)}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(c) for c in table.columns) + " \\\\",
        "\\midrule",
    ]
    for i, row in enumerate(table.rows):
        cells = [
            f"\\textbf{{{latex_escape(c)}}}" if (i, j) in table.marked else latex_escape(c)
            for j, c in enumerate(row)
        ]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


def table_csv(table: Table) -> str:
    """The table's numbers in tidy form (one line per value) when it has them, else its cells."""
    buf = io.StringIO()
    if table.data is not None:
        # CSV has no lists: a list cell (the learning rates tried, say) becomes "a;b;c".
        nested = [c for c, t in table.data.schema.items() if isinstance(t, pl.List)]
        table.data.with_columns(
            pl.col(c).cast(pl.List(pl.String())).list.join(";") for c in nested
        ).write_csv(buf)
    else:
        pl.DataFrame(
            {c: [r[j] for r in table.rows] for j, c in enumerate(table.columns)},
            schema={c: pl.String() for c in table.columns},
        ).write_csv(buf)
    return buf.getvalue()


def table_html(table: Table) -> str:
    """An HTML table; best cells in bold."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = []
    for i, row in enumerate(table.rows):
        cells = "".join(
            f"<td><b>{html.escape(c)}</b></td>"
            if (i, j) in table.marked
            else f"<td>{html.escape(c)}</td>"
            for j, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render(result: Result, fmt_name: Format) -> str:
    """The whole result as text. Markdown and LaTeX carry the header and notes with the tables;
    JSON everything. CSV is the numbers alone (the CLI sends header and notes to stderr): one
    tidy table when every table's records share their columns (the ablation's panels: the
    paired tests' numbers are in the same records), else each table after a `# name` line."""
    if fmt_name == "csv":
        with_data = [t for t in result.tables if t.data is not None]
        same = len({tuple(t.data.columns) for t in with_data}) == 1
        if with_data and same and len(with_data) > 1:
            frames = [t.data for t in with_data]
            merged = Table("all", "", [], [], data=pl.concat(frames, how="diagonal_relaxed"))
            return table_csv(merged)
        if len(result.tables) == 1:
            return table_csv(result.tables[0])
        return "\n".join(f"# {t.name}\n{table_csv(t)}" for t in result.tables)
    if fmt_name == "json":
        return result_json(result)
    hidden = [t.name for t in result.tables if not t.show]
    shown = [t for t in result.tables if t.show]
    if fmt_name == "latex":
        out = [f"% {latex_escape(line)}" for line in [result.title, *result.header]]
        for t in shown:
            out += ["", table_latex(t)]
        notes = result.all_notes()
        if hidden:
            notes.append(f"numbers only, in --format csv or json: {', '.join(hidden)}")
        out += [""] + [f"% note: {latex_escape(n)}" for n in notes]
        return "\n".join(out).rstrip() + "\n"
    if fmt_name != "md":
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt_name!r}")
    out = [f"# {result.title}", ""] + [f"{line}  " for line in result.header]
    for t in shown:
        out += ["", f"## {t.title}", "", table_markdown(t)]
    notes = result.all_notes()
    if hidden:
        notes.append(f"numbers only, in --format csv or json: {', '.join(hidden)}")
    if notes:
        out += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(out).rstrip() + "\n"


def _plain(value: Any) -> Any:
    """A JSON-safe scalar: NaN and infinities as null, timestamps as ISO strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def result_json(result: Result) -> str:
    """The whole result as one JSON document: title, header, settings, notes, every table with
    its display cells and its full-precision records (the numbers a README quotes), and the
    result's summary keys at the top level."""
    doc = {
        "command": result.command,
        "title": result.title,
        "header": result.header,
        "settings": result.settings,
        "notes": result.all_notes(),
        "tables": [
            {
                "name": t.name,
                "title": t.title,
                "columns": t.columns,
                "rows": t.rows,
                "marked": sorted([i, j] for i, j in t.marked),
                "records": [] if t.data is None else t.data.to_dicts(),
            }
            for t in result.tables
        ],
    }
    clash = sorted(set(result.summary) & set(doc))
    if clash:
        raise ValueError(f"summary keys {clash} would overwrite the JSON document's own")
    doc.update(result.summary)
    # Compact: with `indent` json falls back to its pure-Python encoder (seconds on a report of
    # hundreds of arms); `python -m json.tool` or jq pretty-print it.
    return json.dumps(_plain(doc), ensure_ascii=False, allow_nan=False) + "\n"


def text_notes(result: Result) -> str:
    """Header and notes as plain lines (what the CLI prints to stderr next to CSV)."""
    return "\n".join([result.title, *result.header, *(f"note: {n}" for n in result.all_notes())])
