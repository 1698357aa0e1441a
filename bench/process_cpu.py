"""Benchmark: where a sweep's CPU goes, process by process (what a trial's start-up costs).

    python -m bench.process_cpu [--trials 4] [--steps 4] [--json OUT]

Runs the demo sweep (`orchestrator/configs/demo.yaml`, `tiny`, one one-CPU worker per trial,
two trials at a time on this machine) with `--trials` trials of `--steps` steps through the CLI,
and samples /proc every 0.25 s meanwhile: each process started after the sweep's start, its
user + system CPU time (the largest value seen, so a process is counted up to its last sample
before it exited), grouped by role: the Ray actor or task it runs (`ray::RayTrainWorker`,
`ray::TrainController`, ...), else its program (`gcs_server`, `raylet`, Ray's dashboard, the
numsweep driver). The machine's busy and idle CPU seconds over the run come from /proc/stat.

With short trials most of a trial's CPU is its start-up: the roles say what a trial costs beyond
its own training process, and the idle seconds how much of the machine the start-up leaves
unused. Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.trial import DEMO, load_average, machine, start_numsweep

DEFAULT_JSON = Path(__file__).resolve().parent / "out" / "process_cpu.json"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: str) -> tuple[float, str] | None:
    """(user + system CPU seconds, command line) of a live process, else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / TICK, cmdline.replace(b"\0", b" ").decode(
        errors="replace"
    )


def role(cmdline: str) -> str:
    """The role of a process of the sweep, from its command line (Ray names its workers
    `ray::<actor class or task>`)."""
    words = cmdline.split()
    if not words:
        return "?"
    if words[0].startswith("ray::"):
        return words[0]
    if "orchestrator" in words and "sweep" in words:
        return "numsweep driver (CLI)"
    program = next((w for w in words[1:] if w.endswith(".py")), words[0])
    if "multiprocessing.forkserver" in cmdline or "ray-dashboard" in cmdline:
        return "Ray dashboard (subprocess)"
    return Path(program).name


def busy_idle() -> tuple[float, float]:
    """The machine's busy and idle CPU seconds since boot (/proc/stat)."""
    user, nice, system, idle, iowait, irq, softirq, *_ = map(
        int, Path("/proc/stat").read_text().split("\n")[0].split()[1:]
    )
    return (user + nice + system + irq + softirq) / TICK, (idle + iowait) / TICK


def sample_sweep(trials: int, steps: int, work: Path) -> dict[str, Any]:
    """Run the shortened demo sweep and the sampler beside it."""
    before = {p for p in os.listdir("/proc") if p.isdigit()}
    busy0, idle0 = busy_idle()
    start, load_before = time.time(), load_average()
    proc, _ = start_numsweep(
        DEMO,
        work / "sweep",
        f"search.num_trials={trials}",
        f"train.steps={steps}",
        f"eval.every={max(1, steps // 2)}",
        "--name",
        "bench-cpu",
    )
    seen: dict[str, tuple[float, str]] = {}
    while proc.poll() is None:
        for pid in os.listdir("/proc"):
            if pid.isdigit() and pid not in before and (got := cpu_seconds(pid)) is not None:
                cpu, cmdline = got
                if pid not in seen or cpu >= seen[pid][0]:
                    seen[pid] = (cpu, cmdline or seen.get(pid, (0.0, ""))[1])
        time.sleep(0.25)
    if proc.returncode != 0:
        raise SystemExit(f"the sweep failed ({proc.returncode}): see {work / 'sweep'}")
    wall = time.time() - start
    busy1, idle1 = busy_idle()
    roles: dict[str, dict[str, float]] = {}
    for cpu, cmdline in seen.values():
        entry = roles.setdefault(role(cmdline), {"processes": 0, "cpu_s": 0.0})
        entry["processes"] += 1
        entry["cpu_s"] += cpu
    return {
        "trials": trials,
        "steps": steps,
        "wall_s": wall,
        "busy_cpu_s": busy1 - busy0,
        "idle_cpu_s": idle1 - idle0,
        "roles": dict(sorted(roles.items(), key=lambda kv: -kv[1]["cpu_s"])),
        "load_before": load_before,
        "load_after": load_average(),
    }


def print_table(report: dict[str, Any]) -> None:
    n = report["trials"]
    m = report["machine"]
    print(f"\nmachine: {m['cpus']} CPUs, {m.get('gpu', 'no GPU')}, torch {m['torch']}")
    print(
        f"\nthe demo sweep, {n} trials of {report['steps']} steps: wall {report['wall_s']:.1f} s;"
        f" machine busy {report['busy_cpu_s']:.0f} CPU s, idle {report['idle_cpu_s']:.0f} CPU s\n"
    )
    print("| process role | processes | CPU s | CPU s per trial |")
    print("|---|---:|---:|---:|")
    for name, entry in report["roles"].items():
        if entry["cpu_s"] >= 0.1:
            per = entry["cpu_s"] / n
            print(f"| {name} | {entry['processes']} | {entry['cpu_s']:.1f} | {per:.2f} |")
    print(f"\nload average {report['load_before']} → {report['load_after']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: tmp)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = sample_sweep(args.trials, args.steps, args.work or Path(tmp))
    report["machine"] = machine()
    print_table(report)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"\nall numbers: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
