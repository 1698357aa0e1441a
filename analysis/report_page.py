"""The report's HTML: a section (its header lines, figures, tables and notes), the summary that
leads the page, the page around them, the table files each table is also written as, and the
page's script (smoothing and the step/tokens axis of the curves). Relative paths only, styles
inline: the folder can be copied anywhere and opened offline.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analysis.report_figures import Figure
from analysis.result import (
    Result,
    Table,
    result_json,
    table_csv,
    table_html,
    table_latex,
    table_markdown,
)

STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
table { border-collapse: collapse; font-size: 0.82em; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; white-space: nowrap; }
th { background: #f2f2f2; } .scroll { overflow-x: auto; max-height: 32em; overflow-y: auto; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; display: block; }
.notes { font-size: 0.85em; color: #444; } .files { font-size: 0.8em; color: #666; }
nav { font-size: 0.9em; } figure.plot { margin: 0.8em 0; border: 1px solid #eee; }
.curve-controls { font-size: 0.85em; padding: 4px 8px; background: #fafafa; }
"""

SCRIPT = """<script>
// The curves' controls: smoothing by the exponential moving average TensorBoard uses
// (debiased: the first points are not pulled towards 0), and the x-axis in steps or tokens
// seen (each trace's meta.tokens). Gaps (null) stay gaps.
(function () {
  function ema(ys, w) {
    var last = 0, weight = 0, out = [];
    for (var i = 0; i < ys.length; i++) {
      var y = ys[i];
      if (y === null || !isFinite(y)) { out.push(y); continue; }
      last = last * w + (1 - w) * y; weight = weight * w + (1 - w);
      out.push(last / weight);
    }
    return out;
  }
  // plotly.py writes numpy arrays as base64 typed arrays ({dtype, bdata}), which gd.data
  // keeps as written: decode them to plain numbers.
  var TYPES = { f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
                i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array };
  function values(a) {
    if (a && a.bdata !== undefined) {
      var bytes = Uint8Array.from(atob(a.bdata), function (c) { return c.charCodeAt(0); });
      return Array.from(new TYPES[a.dtype](bytes.buffer));
    }
    return Array.from(a || []);
  }
  function setup(box) {
    var gd = document.getElementById(box.getAttribute('data-plot'));
    if (!gd || !gd.data) { return; }
    var raw = gd.data.map(function (t) {
      return { x: values(t.x), y: values(t.y), tokens: t.meta && t.meta.tokens };
    });
    var slider = box.querySelector('input[type=range]');
    var shown = box.querySelector('output');
    function redraw() {
      var w = parseFloat(slider.value);
      shown.textContent = w.toFixed(2);
      var picked = box.querySelector('input[type=radio]:checked');
      var tokens = picked !== null && picked.value === 'tokens';
      Plotly.restyle(gd, {
        x: raw.map(function (r) { return tokens && r.tokens ? r.tokens : r.x; }),
        y: raw.map(function (r) { return w > 0 ? ema(r.y, w) : r.y; })
      });
      var titles = {};
      Object.keys(gd.layout).forEach(function (k) {
        if (/^xaxis[0-9]*$/.test(k)) {
          titles[k + '.title.text'] = tokens ? 'tokens seen' : 'step';
        }
      });
      Plotly.relayout(gd, titles);
    }
    slider.addEventListener('input', redraw);
    box.querySelectorAll('input[type=radio]').forEach(function (r) {
      r.addEventListener('change', redraw);
    });
  }
  window.addEventListener('load', function () {
    document.querySelectorAll('.curve-controls').forEach(setup);
  });
})();
</script>"""


def write_tables(result: Result, tables_dir: Path) -> dict[str, list[str]]:
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


def table_block(t: Table, files: dict[str, list[str]]) -> str:
    """A table's title, the table, and links to its files."""
    links = " · ".join(
        f'<a href="{html.escape(p)}">{p.rsplit(".", 1)[1]}</a>' for p in files.get(t.name, [])
    )
    return "\n".join(
        [
            f'<h3 id="{html.escape(t.name)}">{html.escape(t.title)}</h3>',
            f'<div class="scroll">{table_html(t)}</div>',
            f'<p class="files">files: {links}</p>',
        ]
    )


@dataclass
class Section:
    """One section of the page: header lines, blocks (figures and HTML, in order), notes, and
    what it gives the summary (HTML, and figures drawn there instead of here)."""

    anchor: str
    title: str
    header: list[str] = field(default_factory=list)
    blocks: list[Figure | str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    key_figures: list[Figure] = field(default_factory=list)

    def add_tables(
        self,
        result: Result,
        files: dict[str, list[str]],
        skip: Sequence[str] = (),
        elsewhere: str | None = None,
    ) -> None:
        """`result`'s shown tables but those named in `skip` (with a line saying where they are
        instead: `elsewhere`), links to its numbers-only tables and JSON, and its notes."""
        if skip and elsewhere:
            links = ", ".join(
                f'<a href="#{html.escape(n)}">{html.escape(t.title.split(" — ")[0])}</a>'
                for t in result.tables
                for n in [t.name]
                if n in skip
            )
            self.blocks.append(f'<p class="files">{html.escape(elsewhere)}: {links}</p>')
        for t in result.tables:
            if t.show and t.name not in skip:
                self.blocks.append(table_block(t, files))
        hidden = [t for t in result.tables if not t.show]
        if hidden:
            links = " · ".join(
                f'<a href="{html.escape(p)}">{html.escape(t.name)}</a>'
                for t in hidden
                for p in files.get(t.name, [])
            )
            self.blocks.append(f'<p class="files">numbers only: {links}</p>')
        json_file = files.get(f"{result.command}.json")
        if json_file:
            self.blocks.append(
                f'<p class="files">everything above as JSON: '
                f'<a href="{html.escape(json_file[0])}">{html.escape(json_file[0])}</a></p>'
            )
        self.notes += [n for n in result.all_notes() if n not in self.notes]


def render_section(section: Section, in_summary: set[str]) -> str:
    """The section's HTML; a figure the summary draws is a link to it here."""
    parts = [f'<h2 id="{section.anchor}">{html.escape(section.title)}</h2>']
    parts += [f"<p>{html.escape(line)}</p>" for line in section.header]
    for block in section.blocks:
        if isinstance(block, Figure) and block.name in in_summary:
            parts.append(
                f'<p class="files">figure {html.escape(block.alt)}: in the '
                f'<a href="#summary">summary</a></p>'
            )
        else:
            parts.append(block.html if isinstance(block, Figure) else block)
    if section.notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in section.notes)
        parts.append(f'<div class="notes"><b>Notes</b><ul>{items}</ul></div>')
    return "\n".join(parts)


def render_summary(lines: Sequence[str], sections: Sequence[Section]) -> tuple[str, set[str]]:
    """The page's first section, from what each section gives it; and the names of the figures
    it draws (their sections link here instead of drawing them again)."""
    parts = ['<h2 id="summary">Summary</h2>']
    parts += [f"<p>{html.escape(line)}</p>" for line in lines]
    drawn: set[str] = set()
    for section in sections:
        parts += section.summary
    for section in sections:
        for fig in section.key_figures:
            parts.append(fig.html)
            drawn.add(fig.name)
    if len(parts) == 1 + len(lines):
        parts.append("<p><i>Nothing to summarise yet: see the sections below.</i></p>")
    return "\n".join(parts), drawn


def page(source: str, title: str, body: Sequence[str], head: Sequence[str] = ()) -> str:
    """The whole HTML page: `source` (what it reads) under the title, then `body`; `head`:
    scripts it loads (plotly's, beside it), and the page's script where it has plots."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    scripts = "".join(f"\n{line}" for line in head)
    tail = f"\n{SCRIPT}" if head else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>numsweep analysis: {html.escape(title)}</title>
<style>{STYLE}</style>{scripts}</head>
<body>
<h1>numsweep analysis</h1>
<p>{source} · written {stamp}</p>
{chr(10).join(body)}{tail}
</body></html>
"""


def contents(sections: Sequence[Section]) -> str:
    """A line of links to the sections."""
    links = " · ".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>' for s in sections)
    return f'<nav>sections: <a href="#summary">Summary</a> · {links}</nav>'
