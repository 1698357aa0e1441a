"""The analysis command line (analysis/__main__.py): tables in each format, exit 2 on bad input,
JSON output of every command, `save`, and that it never imports the training stack.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from analysis.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def test_cli_prints_tables_and_exits_2_on_bad_input(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ablation", str(golden)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Ablation") and "| del | 1 |" in out
    assert main(["ablation", str(golden), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    csv = pl.read_csv(io.StringIO(captured.out))
    assert set(csv["arm"]) == {"mle", "del"} and "mean" in csv.columns
    assert "note: one seed: no interval for del" in captured.err
    assert main(["scaling", str(golden), "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out
    cases = [
        (["ablation", str(golden / "missing")], "does not exist"),
        (["entropy", str(golden), "--experiment", "nope"], "unknown experiment 'nope'"),
        (
            ["ablation", str(golden), "--metric", "eval/test/nope"],
            "unknown metric 'eval/test/nope'",
        ),
        (
            ["ablation", str(golden), "--value", "last"],
            "--value must be one of final, best, step:N",
        ),
        (["search", str(golden), "--status", "DONE"], "unknown status DONE"),
        (["entropy", str(golden), "--split", "extra"], "unknown split 'extra'"),
        (["ablation", str(golden), "--level", "1.5"], "confidence level must be in (0, 1)"),
        (["ablation", str(golden), "--all", "--metrics", "gen/macc"], "--all and --metrics"),
        (["scaling", str(golden), "--axis", "Q"], "unknown axis Q"),
        (["scaling", str(golden), "--axis", "D"], "need train/tokens_seen"),
        (["scaling", str(golden), "--bootstrap", "0"], "--bootstrap must be >= 1"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, (argv, err)
    for argv in (["ablation"], ["ablation", str(golden), "--correction", "sidak"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2


def test_analysis_never_imports_the_training_stack(golden: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import analysis, analysis.ablation, analysis.entropy, analysis.scaling\n"
        "import analysis.search, analysis.report, analysis.figures\n"
        "from analysis.__main__ import main\n"
        f"assert main(['report', {str(golden)!r}, '-o', {str(tmp_path / 'r')!r}]) == 0\n"
        "assert 'scipy.stats' in sys.modules  # the statistics are scipy's\n"
        "banned = ('torch', 'ray', 'deepspeed', 'optuna', 'pandas', 'orchestrator', 'trainables')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
    # And the module entry point itself, as users call it.
    cli = subprocess.run(
        [sys.executable, "-m", "analysis", "ablation", str(golden), "--experiment", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 2 and "unknown experiment 'nope'" in cli.stderr


def test_json_output_of_every_command(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("ablation", "entropy", "scaling", "search"):
        assert main([command, str(golden), "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["command"] == command and doc["settings"].get("level", 0.95) == 0.95
        assert {"title", "header", "notes", "tables"} <= set(doc)
        for table in doc["tables"]:
            assert {"name", "title", "columns", "rows", "records"} <= set(table)
    assert main(["ablation", str(golden), "--format", "json", "--level", "0.9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    record = next(
        r
        for r in doc["tables"][0]["records"]
        if r["arm"] == "mle" and r["metric"] == "eval/test/ce"
    )
    # Two seeds 1.00 and 1.05 at the 90% level: t(1) quantile at 0.95 is tan(0.45π).
    half = math.tan(math.pi * 0.45) * 0.025
    assert (record["ci_low"], record["ci_high"]) == pytest.approx((1.025 - half, 1.025 + half))
    assert record["level"] == 0.9 and "90% CI" in doc["tables"][0]["title"]


def test_a_command_that_reads_no_store_needs_no_results(capsys: pytest.CaptureFixture[str]) -> None:
    """`sequential` computes boundaries from numbers alone: neither RESULTS nor --results is asked
    for (the --results spelling's check once assumed every command read a store); its JSON's
    `upper` holds one efficacy boundary per look, O'Brien–Fleming-type ones falling look by look."""
    argv = ["sequential", "--looks", "3", "--alpha", "0.025", "--format", "json"]
    assert main(argv) == 0
    upper = json.loads(capsys.readouterr().out)["upper"]
    assert len(upper) == 3 and upper[0] > upper[1] > upper[2]
