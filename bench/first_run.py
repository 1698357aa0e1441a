"""Benchmark: a newcomer's first `make demo`, from a fresh clone, as a timeline of its phases.

    python -m bench.first_run [--commits REV ...] [--json OUT] [--keep]

For each revision (default: HEAD), one after another: `git clone` this checkout into a new
folder, check the revision out, and run `make demo` there, every line it prints stamped with the
seconds since the start. The phases are read from the commands make echoes (`PHASES`: the venv,
pip's upgrade, uv, torch, the packages, DeepSpeed's op build, the extras, the sweep); each lasts
until the next one starts. The clone's own `.venv` is new, the machine's caches are not: pip's
wheel cache and find-links (torch), uv's cache. Printed as one Markdown table, a column per
revision, with the machine and its load average, and the demo's last table lines (so that a
faster run can be checked to show the same sweep); written to `--json` (default
bench/out/first_run.json). The clones are deleted afterwards unless `--keep`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# (phase, a piece of the command line make echoes when the phase starts), in the order they run.
PHASES: tuple[tuple[str, str], ...] = (
    ("venv created", " -m venv "),
    ("pip upgraded", "--upgrade pip"),
    ("uv installed", 'install -q "uv'),
    ("torch installed", '-c "import torch"'),
    ("packages installed (uv)", "pip install -q --compile-bytecode"),
    ("DeepSpeed's op built", "deepspeed_ops build"),
    ("sweep (start to table)", " -m orchestrator sweep "),
)


def phase_of(line: str) -> str | None:
    """The phase a line make echoed starts, if any: a command's first line (make echoes a
    command's continuation lines indented, its comments with `#`)."""
    if line[:1].isspace() or line.startswith("#"):
        return None
    for name, marker in PHASES:
        if marker in line:
            return name
    return None


def run_demo(folder: Path) -> list[tuple[float, str]]:
    """`make demo` in `folder`: every output line with its seconds since the start."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if "/.venv" not in p
    )
    start = time.monotonic()
    proc = subprocess.Popen(
        ["make", "demo"],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    lines.append((time.monotonic() - start, f"[make demo exited {proc.wait()}]"))
    return lines


def timeline(lines: list[tuple[float, str]]) -> dict[str, float]:
    """Seconds per phase (a phase seen twice adds up), and the whole run's."""
    spans: dict[str, float] = {}
    current, since = "before the first phase", 0.0
    for at, line in lines:
        name = phase_of(line)
        if name is not None:
            spans[current] = spans.get(current, 0.0) + at - since
            current, since = name, at
    end = lines[-1][0]
    spans[current] = spans.get(current, 0.0) + end - since
    spans.pop("before the first phase", None)
    spans["make demo, in all"] = end
    return spans


def first_run(rev: str, keep: bool) -> dict[str, Any]:
    """One fresh clone's `make demo` at `rev`."""
    folder = Path(tempfile.mkdtemp(prefix="numsweep-first-run-"))
    try:
        clone = folder / "numsweep"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", rev], check=True)
        commit = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        lines = run_demo(clone)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    table = [line for _, line in lines if line.startswith("|")]
    return {
        "rev": rev,
        "commit": commit,
        "phases_s": timeline(lines),
        "exit": lines[-1][1],
        "table": table[-8:],
        "lines": lines,
    }


def markdown(runs: list[dict[str, Any]]) -> str:
    """The phases, a column per run."""
    names = [name for name, _ in PHASES] + ["make demo, in all"]
    head = "| phase | " + " | ".join(f"`{r['commit']}` ({r['rev']})" for r in runs) + " |"
    rows = [head, "|---|" + "---:|" * len(runs)]
    for name in names:
        cells = [f"{r['phases_s'][name]:.1f} s" if name in r["phases_s"] else "—" for r in runs]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def cpu_model() -> str:
    """The CPU's name as /proc/cpuinfo gives it (the project machine's varies by session)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_run", description=__doc__)
    parser.add_argument("--commits", nargs="+", default=["HEAD"], help="revisions, in turn")
    parser.add_argument("--json", type=Path, default=ROOT / "bench/out/first_run.json")
    parser.add_argument("--keep", action="store_true", help="keep the clones (and their .venv)")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs ({cpu_model()}), load average before {os.getloadavg()}")
    runs = []
    for rev in args.commits:
        runs.append(first_run(rev, args.keep))
        done = runs[-1]
        print(f"{rev}: {done['exit']}, {done['phases_s']['make demo, in all']:.0f} s", flush=True)
    print(markdown(runs))
    for run in runs:
        print(f"\n`{run['commit']}`'s last table lines:\n" + "\n".join(run["table"]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(runs, indent=1))
    return 0 if all(r["exit"].endswith("exited 0]") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
