"""Running the real `python -m orchestrator …` command line from tests, as a user runs it: a
fresh process (its own embedded Ray instance on 127.0.0.1), never an existing cluster's address."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def write_sweep(folder: Path, sweep: dict) -> Path:
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def _command(args: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return [sys.executable, "-m", "orchestrator", *map(str, args)], env


def numsweep(*args: str | Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the CLI to the end; its own process session, so nothing of it outlives a kill."""
    command, env = _command(args)
    return subprocess.run(
        command,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )


def numsweep_background(*args: str | Path) -> subprocess.Popen:
    """Start the CLI in its own process group (os.killpg kills it and its Ray instance)."""
    command, env = _command(args)
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
