"""A study's report folder (analysis/study_report.py): each command, given as its settings (one at
a time or a declared name -> settings map), saved as Markdown and JSON and indexed with the
command line that remakes it, in the order written; records read back from the JSON; a study's
own results and verdicts saved beside them; the finished-run gate; per-trial final values; the
Markdown table plumbing; a script's arguments. (Every committed study report rebuilt through it,
and each of their index lines run as a command: tests/studies/test_reports_rebuild.py.)"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.ablation import AblationSettings
from analysis.report import ReportSettings
from analysis.result import Result, render
from analysis.study_report import (
    StudyReport,
    cell,
    final_values,
    json_records,
    judged_table,
    markdown_table,
    run_script,
)
from records.errors import ResultsError


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


def test_a_declared_table_map_runs_in_order_and_a_failed_build_leaves_no_index(
    golden: Path, tmp_path: Path
) -> None:
    tables = {
        "acc": AblationSettings(metrics=("eval/test/digit_acc",)),
        "ce": AblationSettings(metrics=("eval/test/ce",)),
    }
    with StudyReport(tmp_path / "out") as report:
        results = report.commands(str(golden), ["golden"], tables)
        assert list(results) == ["acc", "ce"]
        assert report.saved("ce") == json.loads(render(results["ce"], "json"))
    lines = (tmp_path / "out" / "index.txt").read_text().splitlines()
    assert [line.split(": ")[0] for line in lines] == ["acc", "ce"]
    with pytest.raises(RuntimeError), StudyReport(tmp_path / "failed") as report:
        report.commands(str(golden), ["golden"], {"acc": tables["acc"]})
        raise RuntimeError("the study's own step failed")
    assert (tmp_path / "failed" / "acc.md").exists()
    assert not (tmp_path / "failed" / "index.txt").exists()


def test_a_computed_result_and_the_verdicts_are_saved_and_indexed(tmp_path: Path) -> None:
    report = StudyReport(tmp_path)
    result = Result("budget", "Budget per trial", notes=["one note"])
    report.result("budget", result, "the study's script (budget)")
    found = {"H1": "supported", "where": tmp_path / "x"}  # a Path is written as its text
    report.verdicts(found, ["| a |", "|---|"])
    report.verdicts(found, ["line"], made_by="the study's script (H1)")
    report.close()
    assert (tmp_path / "budget.md").read_text() == render(result, "md")
    assert json.loads((tmp_path / "budget.json").read_text())["title"] == "Budget per trial"
    assert json.loads((tmp_path / "verdicts.json").read_text()) == {
        "H1": "supported",
        "where": str(tmp_path / "x"),
    }
    assert (tmp_path / "verdicts.md").read_text() == "line\n"
    assert (tmp_path / "index.txt").read_text().splitlines() == [
        "budget: the study's script (budget)",
        "verdicts: the study's script (H1)",
    ]


def test_no_test_is_read_before_a_registered_run_has_finished(golden: Path, tmp_path: Path) -> None:
    # The golden store's three trials all end TERMINATED (tests/analysis_fixtures.py).
    report = StudyReport(tmp_path)
    assert report.all_finished(str(golden), "golden", 3)
    assert report.index == []
    assert not report.all_finished(str(golden), "golden", 4)
    assert not report.all_finished(str(tmp_path / "no-store"), "golden", 3)
    assert report.index == [
        "golden: 3 of 4 trials finished: no test is read before all are",
        "golden: 0 of 3 trials finished: no test is read before all are",
    ]


def test_final_values_are_each_trials_last_step_after_deduplication(golden: Path) -> None:
    # By hand from tests/analysis_fixtures.py: digit_acc and ce at step 200, the superseded
    # rows (mle_s0's first 0.58, del_s0's attempt-0 0.20 and 1.40) discarded.
    metrics = ["eval/test/digit_acc", "eval/test/ce"]
    final, notes = final_values(str(golden), "golden", metrics, ("loss", "seed"))
    assert final.columns == ["trial_id", *metrics, "loss", "seed"]
    assert final.rows() == [
        ("del_s0", 0.75, 0.90, "del", 0),
        ("mle_s0", 0.60, 1.00, "mle", 0),
        ("mle_s1", 0.64, 1.05, "mle", 1),
    ]
    assert notes == []
    with pytest.raises(ResultsError, match=r"no train/tokens_seen in golden"):
        final_values(str(golden), "golden", [*metrics, "train/tokens_seen"], ("loss",))


def test_markdown_tables_and_cells_are_written_as_given() -> None:
    rows = [["a|b", cell(0.01234, "+.4f"), cell(None, ".3g")]]
    assert markdown_table(["x", "Δ", "p"], rows, "lrr") == [
        "| x | Δ | p |",
        "|---|---:|---:|",
        "| a|b | +0.0123 | — |",
    ]
    assert markdown_table(["x"], [])[1] == "|---|"
    with pytest.raises(ValueError, match="align 'lc'"):
        markdown_table(["x", "y"], [], "lc")
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2"):
        markdown_table(["x", "y"], [["only"]])
    found = [
        {
            "hypothesis": "S1",
            "loss": "mle",
            "primary": True,
            "verdict": "supported",
            "numbers": "n",
        },
        {"hypothesis": "S1", "loss": "del", "primary": False, "verdict": "x", "numbers": "m"},
    ]
    assert judged_table(found, ("hypothesis", "loss")) == [
        "| hypothesis | loss | judged | verdict | numbers |",
        "|---|---|---|---|---|",
        "| S1 | mle | **primary** | supported | n |",
        "| S1 | del | reported | x | m |",
    ]


def test_a_script_gets_one_argument_per_parameter_or_its_usage_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    called = []

    def main(results: str, out: str) -> None:
        called.append((results, out))

    run_script(main, "usage: tables.py RESULTS OUT", ["store", "report"])
    assert called == [("store", "report")]
    with pytest.raises(SystemExit) as exit_:
        run_script(main, "usage: tables.py RESULTS OUT", ["store"])
    assert exit_.value.code == 2
    assert called == [("store", "report")]
    assert "usage: tables.py RESULTS OUT" in capsys.readouterr().err
