"""What a command produces (tables of formatted cells plus the numbers behind them, and notes for
the reader) and how it is written out: Markdown, CSV, LaTeX, HTML."""

from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

Format = Literal["md", "csv", "latex"]
FORMATS: tuple[str, ...] = ("md", "csv", "latex")
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


def fmt_p(p: float | None) -> str:
    """A p-value as "p=0.0321" (three significant digits), "p<1e-4" below that."""
    if p is None:
        return f"p={DASH}"
    return "p<1e-4" if p < 1e-4 else f"p={p:.3g}"


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
        table.data.write_csv(buf)
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
    CSV is the tables alone (each after a `# name` line when there are several) and the CLI sends
    header and notes to stderr."""
    if fmt_name == "csv":
        if len(result.tables) == 1:
            return table_csv(result.tables[0])
        return "\n".join(f"# {t.name}\n{table_csv(t)}" for t in result.tables)
    if fmt_name == "latex":
        out = [f"% {latex_escape(line)}" for line in [result.title, *result.header]]
        for t in result.tables:
            out += ["", table_latex(t)]
        out += [""] + [f"% note: {latex_escape(n)}" for n in result.all_notes()]
        return "\n".join(out).rstrip() + "\n"
    if fmt_name != "md":
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt_name!r}")
    out = [f"# {result.title}", ""] + [f"{line}  " for line in result.header]
    for t in result.tables:
        out += ["", f"## {t.title}", "", table_markdown(t)]
    notes = result.all_notes()
    if notes:
        out += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(out).rstrip() + "\n"


def text_notes(result: Result) -> str:
    """Header and notes as plain lines (what the CLI prints to stderr next to CSV)."""
    return "\n".join([result.title, *result.header, *(f"note: {n}" for n in result.all_notes())])
