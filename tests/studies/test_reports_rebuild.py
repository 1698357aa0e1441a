"""Every committed study report rebuilds from its committed results store byte for byte (the page's
"written …" stamp aside): its tables' numbers, verdicts, figures and index are what the store
says, to the last bit, whatever the order polars hands rows out in. Each study's `make
study-…-report` command, run into a temporary folder and compared file by file."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sweep_runs import ROOT

# Each study: its tables script's arguments (as its Makefile target gives them) and the folder
# its committed report is in.
REPORTS = {
    "del_cpu": ["studies/del_cpu/results"],
    "scaling_cpu": ["studies/scaling_cpu/results"],
    "del_plateau": ["studies/del_plateau/pilot/results", "studies/del_plateau/results"],
    "scaling_code": ["studies/scaling_code/results"],
    "del_pretrained": ["studies/del_pretrained/pilot/results", "studies/del_pretrained/results"],
}
STAMP = re.compile(rb"written \d{4}-\d\d-\d\d \d\d:\d\d UTC")


def files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by its relative path, the written-at stamp blanked."""
    return {
        str(path.relative_to(folder)): STAMP.sub(b"written (stamp)", path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.slow
@pytest.mark.parametrize("study", list(REPORTS))
def test_a_committed_report_rebuilds_byte_for_byte(study: str, tmp_path: Path) -> None:
    out = tmp_path / "report"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    script = f"studies/{study}/tables.py"
    subprocess.run(
        [sys.executable, script, *REPORTS[study], str(out)], cwd=ROOT, env=env, check=True
    )
    committed, rebuilt = files(ROOT / "studies" / study / "report"), files(out)
    assert sorted(rebuilt) == sorted(committed)
    differ = [name for name in committed if committed[name] != rebuilt[name]]
    assert not differ, f"{study}: rebuilt differently: {differ}"


def test_every_committed_report_is_rebuilt_here() -> None:
    committed = {path.parent.name for path in (ROOT / "studies").glob("*/report") if path.is_dir()}
    assert committed == set(REPORTS)


# The robust fits of study 4's `scaling` take 77 s on the 2-core machine; the test above remakes
# that file through the same library call, so only its command line goes unrun here.
UNRUN = {("scaling_code", "scaling")}


@pytest.mark.slow
@pytest.mark.parametrize("study", list(REPORTS))
def test_each_index_line_run_as_a_command_remakes_its_file(
    study: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index.txt's command lines are written from the settings the study's script ran
    (analysis/settings_flags.py): run through `python -m analysis`'s parser, each gives its
    file's Markdown byte for byte."""
    from analysis.__main__ import run

    monkeypatch.chdir(ROOT)  # the lines name the stores relative to the project root
    report = ROOT / "studies" / study / "report"
    ran = 0
    for line in (report / "index.txt").read_text().splitlines():
        name, _, command = line.partition(": ")
        if not command.startswith("python -m analysis ") or "/" in name or (study, name) in UNRUN:
            continue
        _, text, _ = run([*shlex.split(command)[3:], "--format", "md"])
        assert text == (report / f"{name}.md").read_text(), f"{study}: {line}"
        ran += 1
    assert ran >= 3
