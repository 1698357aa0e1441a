"""A study's report folder, written from its results store alone: each analysis command run once
and saved as `<name>.md` (to read) and `<name>.json` (full precision, to quote from), report
pages, files the study's own script makes (its verdicts, its own tables), and `index.txt`, a line
per file saying what remakes it. The skeleton every `studies/*/tables.py` shares, so that a
study's script is a declaration of its tables (a file name -> the settings of the command that
makes it, per store) and the rules only that study applies (its verdicts, the Markdown it writes
them as, with `markdown_table` and `cell`).

A command is its settings object (AblationSettings, PowerSettings, …) run through the analysis
library; `index.txt` lists the `python -m analysis` command line that remakes each file, written
from those settings (analysis/settings_flags.py).
"""

from __future__ import annotations

import inspect
import json
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import polars as pl

from analysis.commands import call, command_line, command_of
from analysis.report import ReportSettings, write_report
from analysis.result import DASH, Result, render
from records.errors import ResultsError
from records.reader import current_trials, load_finished_trials, open_store, read_latest

Tables = Mapping[str, Any]
"""A study's tables on one store: each file's name -> the settings of the command that makes it
(AblationSettings, PowerSettings, …), in the order they are written."""

_RULES = {"l": "---", "r": "---:"}


def json_records(path: Path, table: str) -> list[dict[str, Any]]:
    """The records of table `table` in an analysis command's JSON output at `path`."""
    tables = json.loads(path.read_text())["tables"]
    return [r for t in tables if t["name"] == table for r in t.get("records") or []]


def paired_record(result: dict[str, Any], arm: str, metric: str) -> dict[str, Any] | None:
    """The one paired-test record of `arm` on `metric` (against its baseline) in an ablation's
    JSON output, or None when there is none (or more than one)."""
    found = [
        r
        for t in result["tables"]
        for r in t.get("records") or []
        if r.get("arm") == arm and r.get("metric") == metric and r.get("baseline_arm")
    ]
    return found[0] if len(found) == 1 else None


def finished_trials(root: str, experiment: str) -> int:
    """How many trials of `experiment` have finished (TERMINATED) in the store at `root`; 0
    when the store or the experiment does not exist yet."""
    return load_finished_trials(root, experiment).height


def final_values(
    root: str, experiment: str, metrics: Sequence[str], columns: Sequence[str]
) -> tuple[pl.DataFrame, list[str]]:
    """Per current trial of `experiment` in the store at `root` (by trial_id): each of `metrics`
    at its last step, a column each in that order, then the trial's `columns` (loss, model,
    seed, …); and the trials table's notes. A metric no trial reported is a ResultsError."""
    store = open_store(root, [experiment])
    trials, notes = current_trials(store)
    latest, _ = read_latest(store, metrics)
    missing = [m for m in metrics if m not in set(latest["metric"])]
    if missing:
        raise ResultsError(f"{root}: no {', '.join(missing)} in {experiment}")
    final = (
        latest.sort("step")
        .group_by("trial_id", "metric")
        .agg(pl.col("value").last())
        .pivot(on="metric", index="trial_id", values="value")
        .select("trial_id", *metrics)  # pivot's column order follows the rows': fix it
        .join(trials.select("trial_id", *columns), on="trial_id")
    )
    return final.sort("trial_id"), notes


def cell(x: float | None, spec: str) -> str:
    """`x` formatted by `spec` (a format spec: "+.4f", ".3g", "d"), or the dash for None: a
    verdict table's cell."""
    return DASH if x is None else format(x, spec)


def markdown_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], align: str = ""
) -> list[str]:
    """The lines of a Markdown table: the header, the rule (`align`: a letter per column, "l"
    left or "r" right, left when empty) and a line per row, cells as given (not escaped)."""
    align = align or "l" * len(columns)
    if len(align) != len(columns) or set(align) - set(_RULES):
        raise ValueError(f"align {align!r}: one of l or r per column ({len(columns)} columns)")
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(_RULES[a] for a in align) + "|"]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(columns)}: {row}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def judged_table(found: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[str]:
    """The Markdown of verdict rows (each with `keys`, `primary`, `verdict` and `numbers`): a
    row each, the hypothesis judged on marked **primary**, the others `reported`."""
    rows = []
    for v in found:
        judged = "**primary**" if v["primary"] else "reported"
        rows.append([*(v[k] for k in keys), judged, v["verdict"], v["numbers"]])
    return markdown_table([*keys, "judged", "verdict", "numbers"], rows)


def run_script(main: Callable[..., None], usage: str, argv: Sequence[str] | None = None) -> None:
    """A study script's entry point: `main` called with the command line's arguments (one per
    parameter of `main`); any other count prints `usage` (the script's docstring) and exits 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != len(inspect.signature(main).parameters):
        print(usage, file=sys.stderr)
        raise SystemExit(2)
    main(*args)


class StudyReport:
    """The report folder `out` (made if missing) and its index, written by `close` (or on leaving
    a `with` block without an error: a failed build leaves no index to pass for a whole one)."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.index: list[str] = []

    def __enter__(self) -> StudyReport:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()

    def command(self, name: str, root: str, experiments: Sequence[str], settings: Any) -> Result:
        """The command of `settings` on the store at `root` (its `experiments`), saved as
        OUT/<name>.md and OUT/<name>.json; its result."""
        command = command_of(settings)
        if command == "report":  # a page, not a result to save: `page` writes it
            raise TypeError("a report page is written by StudyReport.page")
        result = call(settings, root, experiments)
        for fmt in ("md", "json"):
            (self.out / f"{name}.{fmt}").write_text(render(result, fmt))
        argv = command_line(command, root, settings, experiments)
        self.index.append(f"{name}: python -m analysis {shlex.join(argv)}")
        return result

    def commands(self, root: str, experiments: Sequence[str], tables: Tables) -> dict[str, Result]:
        """Each of `tables` run by `command` on the same store and experiments, in order; their
        results by name."""
        return {name: self.command(name, root, experiments, s) for name, s in tables.items()}

    def command_json(
        self, name: str, root: str, experiments: Sequence[str], settings: Any
    ) -> dict[str, Any]:
        """`command`, and the JSON it wrote (every table's records, full precision)."""
        self.command(name, root, experiments, settings)
        return self.saved(name)

    def saved(self, name: str) -> dict[str, Any]:
        """The JSON saved as `name` (every table's records, full precision)."""
        return json.loads((self.out / f"{name}.json").read_text())

    def records(self, name: str, table: str) -> list[dict[str, Any]]:
        """The records of table `table` of the command saved as `name`."""
        return json_records(self.out / f"{name}.json", table)

    def result(self, name: str, result: Result, made_by: str) -> None:
        """A result the study's script computed itself, saved as OUT/<name>.md and .json like a
        command's; `made_by` says in the index what made it."""
        for fmt in ("md", "json"):
            (self.out / f"{name}.{fmt}").write_text(render(result, fmt))
        self.note(f"{name}: {made_by}")

    def verdicts(self, found: Any, markdown: Sequence[str], made_by: str | None = None) -> None:
        """OUT/verdicts.json (`found`, everything the study's rules judged) and OUT/verdicts.md
        (its `markdown` lines); `made_by`, when given, says in the index what made them."""
        (self.out / "verdicts.json").write_text(json.dumps(found, indent=1, default=str))
        (self.out / "verdicts.md").write_text("\n".join(markdown) + "\n")
        if made_by is not None:
            self.note(f"verdicts: {made_by}")

    def all_finished(self, root: str, experiment: str, trials: int) -> bool:
        """Whether all `trials` of `experiment` (a registered run) have finished in the store at
        `root`; when not, the index says how many have, and that no test is read before all."""
        done = finished_trials(root, experiment)
        if done != trials:
            self.note(
                f"{experiment}: {done} of {trials} trials finished: no test is read before all are"
            )
        return done == trials

    def page(self, root: str, experiment: str, folder: str) -> None:
        """The static HTML report of `experiment` under `root`, in OUT/<folder>/index.html: PNG
        figures, no JavaScript (plotly's 4.6 MiB per report would not fit the GPU check's one
        device call beside the tree, bench/gpu_kit.py)."""
        write_report(
            open_store(root, [experiment]), ReportSettings(out=self.out / folder, static=True)
        )
        self.index.append(
            f"{folder}/index.html: python -m analysis report {root} --experiment {experiment} "
            "--static"
        )

    def note(self, line: str) -> None:
        """An index line for a file the study's script wrote itself, or for what is missing."""
        self.index.append(line)

    def close(self) -> None:
        """OUT/index.txt: the index lines in the order the files were written."""
        (self.out / "index.txt").write_text("\n".join(self.index) + "\n")
