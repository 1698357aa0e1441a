"""Running the real `python -m orchestrator …` command line from tests, as a user runs it: a
fresh process (its own embedded Ray instance on 127.0.0.1), never an existing cluster's address;
and `python -m analysis …` on what it wrote."""

from __future__ import annotations

import json
import os
import re
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


def analysis(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `python -m analysis ARGS` to the end, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "analysis", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def numsweep_background(*args: str | Path, log: Path | None = None) -> subprocess.Popen:
    """Start the CLI in its own process group (os.killpg kills it and its Ray instance); its
    output goes to `log` when given (to say why a run ended early), else nowhere."""
    command, env = _command(args)
    out = subprocess.DEVNULL if log is None else log.open("w")
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=out,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
    )


def log_tail(log: Path, chars: int = 3000) -> str:
    """The end of a background run's log, for an assertion message."""
    return log.read_text(errors="replace")[-chars:] if log.is_file() else "(no log)"


def tune_actor_pids(results: Path) -> dict[str, set[int]]:
    """Trial folder -> the process ids its Tune trial reported from (Ray Tune's own result log,
    `result.json`, one line per report, in the Ray state under the results store)."""
    pids: dict[str, set[int]] = {}
    for log in results.glob("experiments/*/ray/*/*/result.json"):
        lines = log.read_text().splitlines()
        pids[log.parent.name] = {json.loads(line)["pid"] for line in lines if line.strip()}
    return pids


_PROGRESS = re.compile(r"^\S+: \d+/\d+ done, \d+ running, \d+ failed( \|.*)?$")
_SUMMARY = re.compile(r"^\d+ trials, \d+ failed\. Results: ")


def line_kinds(text: str) -> list[tuple[str, str]]:
    """Each line of a sweep's terminal output with its kind, as a person reads them: `numsweep`
    (set-up lines), `failed trial`, `progress`, `table` (the end-of-sweep tables, from their
    `# ` title to the summary), `summary`, `next` (the "Next:" block), `warning`, `blank`, or
    `other` (anything numsweep did not write). A line redrawn in place (`\\r`) counts each
    drawing; the line-clearing code of a redraw is dropped."""
    kinds: list[tuple[str, str]] = []
    in_table = False
    for raw in text.replace("\r\n", "\n").split("\n"):
        for line in raw.replace("\x1b[K", "").split("\r"):
            if _SUMMARY.match(line):
                in_table, kind = False, "summary"
            elif in_table or line.startswith("# "):
                in_table, kind = True, "table"
            elif not line.strip():
                kind = "blank"
            elif line.startswith("numsweep: trial ") and " failed: " in line:
                kind = "failed trial"
            elif line.startswith("numsweep: "):
                kind = "numsweep"
            elif _PROGRESS.match(line):
                kind = "progress"
            elif line == "Next:" or line.startswith(("  numsweep ", "  python -m analysis ")):
                kind = "next"
            elif line.startswith(("warning: ", "error: ")):
                kind = "warning"
            else:
                kind = "other"
            kinds.append((kind, line))
    return kinds
