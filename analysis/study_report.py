"""A study's report folder, written from its results store alone: each analysis command run once
and saved as `<name>.md` (to read) and `<name>.json` (full precision, to quote from), report
pages, files the study's own script makes, and `index.txt`, a line per file saying what remakes
it. The skeleton every `studies/*/tables.py` shares; what differs between studies (their
commands, verdict rules, verdict tables) stays in each script.

A command is its settings object (AblationSettings, PowerSettings, …) run through the analysis
library; `index.txt` lists the `python -m analysis` command line that remakes each file, written
from those settings (analysis/settings_flags.py).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.commands import call, command_line, command_of
from analysis.report import ReportSettings, write_report
from analysis.result import Result, render
from records.reader import load_finished_trials, open_store


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


class StudyReport:
    """The report folder `out` (made if missing) and its index, written by `close`."""

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.index: list[str] = []

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

    def command_json(
        self, name: str, root: str, experiments: Sequence[str], settings: Any
    ) -> dict[str, Any]:
        """`command`, and the JSON it wrote (every table's records, full precision)."""
        self.command(name, root, experiments, settings)
        return json.loads((self.out / f"{name}.json").read_text())

    def records(self, name: str, table: str) -> list[dict[str, Any]]:
        """The records of table `table` of the command saved as `name`."""
        return json_records(self.out / f"{name}.json", table)

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
