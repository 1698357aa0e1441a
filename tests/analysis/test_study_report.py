"""A study's report folder (analysis/study_report.py): each command, given as its settings, saved
as Markdown and JSON and indexed with the command line that remakes it, in the order written;
records read back from the JSON. (Every committed study report rebuilt through it, and each of
their index lines run as a command: tests/studies/test_reports_rebuild.py.)"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.ablation import AblationSettings
from analysis.report import ReportSettings
from analysis.study_report import StudyReport, json_records


def test_commands_are_saved_and_indexed_in_order(golden: Path, tmp_path: Path) -> None:
    report = StudyReport(tmp_path / "out")
    settings = AblationSettings(metrics=("eval/test/digit_acc",))
    result = report.command("first", str(golden), [], settings)
    saved = report.command_json("second", str(golden), ["golden"], replace(settings, family="all"))
    report.note("made by hand: the study's own script")
    report.close()
    out = tmp_path / "out"
    assert (out / "first.md").read_text().startswith("#")
    assert json.loads((out / "first.json").read_text())["command"] == result.command == "ablation"
    assert saved == json.loads((out / "second.json").read_text())
    assert (out / "index.txt").read_text().splitlines() == [
        f"first: python -m analysis ablation {golden} --metrics eval/test/digit_acc",
        f"second: python -m analysis ablation {golden} --experiment golden --metrics "
        "eval/test/digit_acc --family all",
        "made by hand: the study's own script",
    ]
    tables = {t["name"]: t for t in saved["tables"]}
    name = next(n for n, t in tables.items() if t.get("records"))
    assert report.records("second", name) == tables[name]["records"]
    assert json_records(out / "second.json", name) == tables[name]["records"]
    assert report.records("second", "no such table") == []
    with pytest.raises(TypeError, match=r"StudyReport\.page"):
        report.command("page", str(golden), [], ReportSettings(out=tmp_path / "page"))
