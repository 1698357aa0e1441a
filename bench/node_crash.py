"""The failure scenarios of tests/cluster, run again and again: how often a sweep survives the
loss of a worker node (`--scenario node`) or of its trials' Train controllers (`controller`), and
how long it takes to recover.

Each run starts a fresh local cluster (cluster/local.py: a head with no CPU, two 1-CPU worker
nodes) beside a one-node "bystander" Ray instance (as `make test` runs other Ray tests beside
the cluster tests), submits the two-trial sweep of `tests.cluster.cluster_fixtures`, causes the
failure once a trial has a checkpoint (`crash_node_midway`: SIGKILL the worker node of a trial;
`kill_controllers_midway`: SIGKILL every Train controller and Ray Train placement-group cleaner),
waits for the job, checks what the tests check (every step of every trial stored once, the hit
trials resumed from their checkpoints) and stops the cluster. A run whose job does not end
within `--timeout` is a hang: its diagnosis (the fixture's one-line `diagnose` and `stuck_job`)
and the head's logs of Ray Train's controllers and placement-group cleaners are kept under
`--out`.

    python -m bench.node_crash --runs 20 [--scenario node|controller] [--timeout 300]
        [--out bench/out/node_crash]

One JSON line per run in OUT/runs.jsonl; a summary at the end. Results: cluster/README.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from tests.cluster.cluster_fixtures import (
    LocalCluster,
    assert_complete,
    assert_resumed,
    crash_node_midway,
    first_new_row,
    kill_controllers_midway,
    latest_trials,
    reported_steps,
    restarts_per_trial,
    runtime_env_without_pip,
)

# The head's worker logs worth keeping from a hang: the processes that hold or free a trial's
# resources.
KEPT_LOGS = ("PlacementGroupCleaner", "TrainController", "ImplicitFunc")


def _measure(run: dict[str, Any]) -> dict[str, Any]:
    """What the tests assert, as facts rather than assertions, and the recovery times."""
    experiment = run["config"]["experiment"]
    results = run["results"]
    facts: dict[str, Any] = {"status": run["job"]["status"]}
    hit = run.get("steps") or {run["trial"]: run["step"]}  # trial -> step stored when hit
    try:
        assert_complete(results, run["config"])
        for trial_id, step in hit.items():
            assert_resumed(reported_steps(results, experiment, trial_id), step, run["config"])
        facts["complete_and_resumed"] = True
    except AssertionError as error:
        facts["complete_and_resumed"] = f"no: {str(error)[:300]}"
    if facts["status"] == "SUCCEEDED":
        recovered = min(first_new_row(results, experiment, t, s) for t, s in hit.items())
        finished = latest_trials(results, experiment)["end"].max().timestamp()
        facts["recovered_s"] = round(recovered - run["failed_at"], 1)
        facts["done_s"] = round(finished - run["failed_at"], 1)
    facts["tune_restarts"] = restarts_per_trial(results, experiment)
    facts["groups_removed_by_numsweep"] = run["logs"].count("numsweep: removed placement group")
    return facts


def _keep_head_logs(cluster: LocalCluster, into: Path) -> None:
    """Copy the head's worker logs of the control actors (a hang's evidence) into `into`."""
    logs = cluster.dir / "ray" / "head" / "session_latest" / "logs"
    into.mkdir(parents=True, exist_ok=True)
    for out in logs.glob("worker-*.out"):
        head = out.read_text(errors="replace")[:2000]
        # The header names the actor's class plainly or qualified (`wrap_function.<locals>.…`).
        if any(re.search(rf":actor_name:(\S*\.)?{name}\b", head) for name in KEPT_LOGS):
            for path in (out, out.with_suffix(".err")):
                if path.exists():
                    shutil.copy(path, into / path.name)


SCENARIOS = {"node": crash_node_midway, "controller": kill_controllers_midway}


def one_run(index: int, scenario: str, out: Path, timeout: float) -> dict[str, Any]:
    """One fresh cluster, one failure, one record."""
    record: dict[str, Any] = {"run": index, "started": time.strftime("%H:%M:%S")}
    cluster = LocalCluster.start(workers=2, cpus=1)
    work = Path(tempfile.mkdtemp(prefix="node-crash-"))
    try:
        runtime_env = runtime_env_without_pip(work)
        try:
            run = SCENARIOS[scenario](cluster, work, runtime_env, f"{scenario}crash", timeout)
        except AssertionError as error:
            # A job that did not end says "diagnosis: …" first; anything else failed before
            # the failure was caused (the sweep never reached the state to hit).
            first = str(error).splitlines()[0]
            record.update(status="HUNG" if first.startswith("diagnosis:") else "SETUP", error=first)
            diagnosis = out / f"run-{index:02d}"
            diagnosis.mkdir(parents=True, exist_ok=True)
            (diagnosis / "diagnosis.txt").write_text(str(error))
            _keep_head_logs(cluster, diagnosis / "head-logs")
            return record
        record.update(
            placement=run["placement"], hit=run.get("steps") or {run["trial"]: run["step"]}
        )
        record.update(_measure(run))
        return record
    finally:
        cluster.stop()
        shutil.rmtree(cluster.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def summary(records: list[dict[str, Any]]) -> str:
    ok = [
        r
        for r in records
        if r.get("status") == "SUCCEEDED" and r.get("complete_and_resumed") is True
    ]
    lines = [f"{len(ok)}/{len(records)} runs: job SUCCEEDED, every step once, resumed"]
    for key in ("recovered_s", "done_s"):
        values = sorted(r[key] for r in ok)
        if values:
            median, low, high = values[len(values) // 2], values[0], values[-1]
            lines.append(f"{key}: median {median:.1f}, range {low:.1f}-{high:.1f}")
    if ok:
        restarted = sum(1 for r in ok if any(r["tune_restarts"].values()))
        lines.append(f"runs with a Tune restart: {restarted}")
    for r in records:
        if r not in ok:
            lines.append(f"run {r['run']}: {r.get('status')} {r.get('error', '')[:300]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="node")
    parser.add_argument("--timeout", type=float, default=300.0, help="a job's deadline, s")
    parser.add_argument("--out", type=Path, default=Path("bench/out/node_crash"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    records = []
    bystander = LocalCluster.start(workers=0)
    try:
        with open(args.out / "runs.jsonl", "a") as log:
            for index in range(args.runs):
                records.append(_logged(index, args, log))
    finally:
        bystander.stop()
        shutil.rmtree(bystander.dir, ignore_errors=True)
    print(summary(records))
    return 0 if all(r.get("status") == "SUCCEEDED" for r in records) else 1


def _logged(index: int, args: argparse.Namespace, log: Any) -> dict[str, Any]:
    """One run, its record written to `log` and printed."""
    try:
        record = one_run(index, args.scenario, args.out, args.timeout)
    except Exception:  # a run that could not even start: recorded, the loop goes on
        record = {"run": index, "status": "ERROR", "error": traceback.format_exc()[-800:]}
    log.write(json.dumps(record, default=str) + "\n")
    log.flush()
    print(json.dumps(record, default=str), flush=True)
    return record


if __name__ == "__main__":
    raise SystemExit(main())
