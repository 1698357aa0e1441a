"""orchestrator.cli's conventions (issue 60), through the real command line: `--version`,
`status --format json` (the same facts as the table), `--experiment E` beside the positional E,
`sweep --print-config` (the resolved sweep, read back to the same config, nothing launched or
written), `numsweep analyze` (python -m analysis itself) and `numsweep completion bash` (run in
bash on simulated command lines)."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.status import experiment_status
from orchestrator.sweep.sweep_file import load_sweep
from records.writer import ResultsStore
from tests.records.test_writer import SWEEP, write_store

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "orchestrator/configs/demo.yaml"
STUDY = ROOT / "studies/del_cpu/results"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A copy of study 1's committed store (status opens its Optuna database)."""
    root = tmp_path_factory.mktemp("store") / "results"
    shutil.copytree(STUDY, root)
    return root


def test_version_of_both_command_lines(capsys):
    expected = importlib.metadata.version("numsweep")
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"numsweep {expected}\n"
    for module in ("orchestrator", "analysis"):
        out = subprocess.run(
            [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=True
        ).stdout
        assert out.split()[-1] == expected, out


def test_status_json_has_the_tables_facts(tmp_path, capsys):
    write_store(tmp_path)
    ResultsStore(str(tmp_path), "rr").write_manifest({"config": SWEEP.model_dump(mode="json")})
    assert main(["status", "rr", "--results", str(tmp_path), "--format", "json"]) == 0
    record = json.loads(capsys.readouterr().out)
    # the values written by write_store (its docstring): dist2_b's final 0.61 is the best
    assert record["counts"] == {"RUNNING": 1, "TERMINATED": 2}
    assert [t["trial_id"] for t in record["trials"]] == ["del_c", "dist2_b", "mle_a"]
    assert record["best"] == [
        {
            "metric": "eval/test/digit_acc",
            "mode": "max",
            "trial_id": "dist2_b",
            "loss": "dist2",
            "value": 0.61,
        }
    ]
    text = experiment_status(str(tmp_path), SWEEP)
    assert "best max eval/test/digit_acc: 0.61 (trial dist2_b, loss dist2)" in text
    assert f"metrics parts: {record['parts']['metrics']} in {record['files']['metrics']}" in text


def test_status_json_of_a_committed_search(store, capsys):
    assert (
        main(["status", "-f", "json", "--experiment", "del-cpu-search", "--results", str(store)])
        == 0
    )
    record = json.loads(capsys.readouterr().out)
    assert record["mode"] == "search"
    assert record["counts"] == {"TERMINATED": len(record["trials"])}
    assert record["optuna_studies"] == {"del-cpu-search": len(record["trials"])}
    best = record["best"][0]
    values = [t["eval/test/digit_acc"] for t in record["trials"]]
    assert best["value"] == max(values)
    assert main(["status", "del-cpu-search", "--results", str(store)]) == 0
    assert f"best max eval/test/digit_acc: {best['value']:.6g}" in capsys.readouterr().out


def test_experiment_positionally_or_as_a_flag(store, capsys):
    assert main(["status", "del-cpu-ablation", "--results", str(store)]) == 0
    positional = capsys.readouterr().out
    assert main(["status", "--experiment", "del-cpu-ablation", "--results", str(store)]) == 0
    assert capsys.readouterr().out == positional
    for argv, message in (
        (["status", "a", "--experiment", "b"], "experiment a and --experiment b: give one"),
        (["compact"], "compact: give the experiment (E or --experiment E)"),
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err


def test_print_config_is_the_resolved_sweep_and_launches_nothing(tmp_path, capsys):
    overrides = ["train.lr=1e-3", "search.num_trials=7"]
    argv = ["sweep", str(DEMO), *overrides, "--name", "printed", "--results", str(tmp_path / "r")]
    assert main([*argv, "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "lr: 0.001" in printed and "num_trials: 7" in printed
    (tmp_path / "printed.yaml").write_text(printed)
    again = load_sweep(tmp_path / "printed.yaml")
    assert again == load_sweep(DEMO, [*overrides, "experiment=printed"])
    assert again.experiment == "printed" and again.trial.train.lr == 1e-3
    assert not (tmp_path / "r").exists()


def test_print_config_refuses_a_bad_override_with_exit_2(tmp_path, capsys):
    assert main(["sweep", str(DEMO), "train.lr=.nan", "--print-config"]) == 2
    assert "trial.train.lr: not a finite number" in capsys.readouterr().err


def test_analyze_is_python_m_analysis(store, capsys):
    flags = ["--experiment", "del-cpu-ablation", "--format", "json", "--metrics", "eval/test/ce"]
    assert main(["analyze", "ablation", "--results", str(store), *flags]) == 0
    through_numsweep = json.loads(capsys.readouterr().out)
    out = subprocess.run(
        [sys.executable, "-m", "analysis", "ablation", str(store), *flags],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert through_numsweep == json.loads(out)
    assert through_numsweep["tables"], through_numsweep.keys()
    with pytest.raises(SystemExit) as exit_:
        main(["analyze", "ablation", "--experiment", "del-cpu-ablation"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: numsweep analyze ")
    assert "give RESULTS (or --results DIR)" in err


COMPLETE = """source {script}
t() {{ COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=(); _numsweep
      echo "${{COMPREPLY[*]}}"; }}
t numsweep st
t numsweep status --f
t numsweep status --format j
t numsweep analyze ab
t numsweep sweep --dr
t numsweep sweep demo
t numsweep c
"""


def test_completion_script_completes_commands_flags_and_choices(tmp_path, capsys):
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "numsweep.bash"
    script.write_text(capsys.readouterr().out)
    out = subprocess.run(
        ["bash", "-c", COMPLETE.format(script=script)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # the sweep file itself: no words, so bash's default (file names) completes it
    assert out == ["status", "--format", "json", "ablation", "--dry-run", "", "compact completion"]
