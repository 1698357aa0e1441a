"""The analysis-only install (issue 60): `pip install numsweep` without extras, built here in a
virtualenv of its own with uv from the project's pyproject.toml, has no torch, Ray, DeepSpeed or
Optuna, and runs `python -m analysis report --static` on a committed store (study 1's; the
interactive page asks for the `report` extra); its `numsweep` prints its version and, asked to
run or read a sweep, says which extra to install (exit 2).
Before, analysing Parquet on a laptop meant installing the whole training stack (DeepSpeed
built from source)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "studies/del_cpu/results"
HEAVY = ("torch", "ray", "deepspeed", "optuna", "transformers", "mathematics_dataset")


def run(argv: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=check)


@pytest.mark.slow
def test_a_base_install_analyses_a_committed_store(tmp_path):
    uv = Path(sys.executable).parent / "uv"  # `make venv` installs uv into the venv
    assert uv.exists(), f"{uv}: make venv installs it"
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run([str(uv), "venv", "-q", str(venv), "--python", sys.executable], tmp_path)
    # a copy of the tree without its results, caches and venvs (as a wheel would carry it)
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns(".venv*", ".git", "results", "studies", "tests", "__pycache__")
    shutil.copytree(ROOT, source, ignore=ignore)
    run([str(uv), "pip", "install", "-q", "--python", str(python), str(source)], tmp_path)

    missing = run(
        [
            str(python),
            "-c",
            f"import importlib.util as u; print([m for m in {HEAVY!r} if u.find_spec(m) is None])",
        ],
        tmp_path,
    ).stdout
    assert missing.strip() == repr(list(HEAVY)), missing

    store = tmp_path / "results"
    shutil.copytree(STORE, store)
    # The interactive page needs plotly (the `report` extra, 64 MiB, not in the base install):
    # without it, exit 2 naming the extra and --static; with --static, the PNG page.
    report_argv = [str(python), "-m", "analysis", "report", str(store), "-o"]
    interactive = run([*report_argv, str(tmp_path / "interactive")], tmp_path, False)
    assert interactive.returncode == 2, interactive.stdout
    assert "numsweep[report]" in interactive.stderr and "--static" in interactive.stderr
    assert not (tmp_path / "interactive" / "index.html").exists()
    report = run([*report_argv, str(tmp_path / "report"), "--static"], tmp_path)
    assert (tmp_path / "report" / "index.html").stat().st_size > 0, report.stdout
    assert "del-cpu-ablation" in (tmp_path / "report" / "index.html").read_text()

    numsweep = str(venv / "bin" / "numsweep")
    assert run([numsweep, "--version"], tmp_path).stdout.startswith("numsweep ")
    status = run([numsweep, "status", "del-cpu-search", "--results", str(store)], tmp_path, False)
    assert status.returncode == 2
    assert "pip install 'numsweep[sweep]'" in status.stderr, status.stderr
