"""numsweep on a real multi-node Ray cluster on this machine, driven as a user drives one.

cluster/local.py starts a head (no CPU: it hosts drivers only) and two worker nodes with one CPU
each, every node its own `ray start` process, all on 127.0.0.1, Ray's token authentication on.
Sweeps go in with `ray job submit --runtime-env` (cluster/runtime_env.yaml); placement and
failures are read from Ray's state CLI; results from the Parquet the sweep writes. A grid of two
one-worker trials runs both at once, so each takes one worker node. Failures are real and made
by pid: a Ray Train worker process SIGKILLed, a whole worker node SIGKILLed, the sweep's driver
SIGKILLed and the job resubmitted. Recovery times are printed (`pytest -s`), never asserted.

The scenarios run in this file's order on one cluster; the node crash comes last because it
leaves one worker node. Every wait has a deadline; the cluster fixture stops every process it
started and checks that none is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import time
from pathlib import Path

import pytest

from tests.cluster.cluster_fixtures import (
    LocalCluster,
    assert_complete,
    assert_resumed,
    crash_node_midway,
    first_new_row,
    kill_controllers_midway,
    latest_trials,
    metrics,
    reported_steps,
    restarts_per_trial,
    running,
    runtime_env_without_pip,
    stored_steps,
    sweep_command,
    sweep_config,
    wait_for,
    write_sweep,
)

pytestmark = pytest.mark.slow

# A job's deadline in each scenario: a sweep here takes 1-2 minutes, a recovery under load up to
# about 4 (cluster/README.md); a hang fails the test with its diagnosis on the first line.
JOB_TIMEOUT_S = 420


def _stop(cluster: LocalCluster) -> None:
    cluster.stop()
    left = cluster.pids()
    shutil.rmtree(cluster.dir, ignore_errors=True)
    assert not left, f"processes of the cluster survive `local.py stop`: {sorted(left)}"


@pytest.fixture(scope="module")
def bystander():
    """Another Ray instance on the same machine, as when `make test` runs another file's Ray
    beside this one: Ray processes that look for "the" cluster among the machine's Ray processes
    find two (Ray Train's placement-group cleaner did, and stopped watching: the CI hang)."""
    started = LocalCluster.start(workers=0)
    try:
        yield started
    finally:
        _stop(started)


@pytest.fixture(scope="module")
def cluster(bystander):
    started = LocalCluster.start(workers=2, cpus=1)
    try:
        yield started
    finally:
        _stop(started)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cluster")


@pytest.fixture(scope="module")
def runtime_env(work) -> Path:
    return runtime_env_without_pip(work)


# ---- the cluster itself ----------------------------------------------------------------------


def test_nodes_are_separate_loopback_nodes_with_their_own_resources(cluster):
    nodes = {n["node_name"]: n for n in cluster.nodes() if n["state"] == "ALIVE"}
    assert sorted(nodes) == ["head", "worker-1", "worker-2"]
    assert {n["node_ip"] for n in nodes.values()} == {"127.0.0.1"}
    assert nodes["head"]["is_head_node"]
    assert nodes["head"]["resources_total"].get("CPU", 0) == 0
    for name in ("worker-1", "worker-2"):
        assert nodes[name]["resources_total"]["CPU"] == 1
    # Three `ray start` processes, each its own node.
    starts = {name: node["pid"] for name, node in cluster.state["nodes"].items()}
    assert len(set(starts.values())) == 3
    for name, pid in starts.items():
        assert pid in cluster.pids(name)


def _listening_sockets(pids: set[int]) -> list[tuple[int, str, int]]:
    """(pid, local address, port) of every listening TCP socket and bound UDP socket of `pids`."""
    owner = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    owner[link[8:-1]] = pid
        except OSError:
            continue
    found = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with open(f"/proc/net/{table}") as fh:
            for line in fh.read().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if inode not in owner or (table.startswith("tcp") and state != "0A"):
                    continue  # not ours, or a TCP socket that is not listening
                address, port = local.split(":")
                # /proc/net prints addresses as host-order hex words.
                raw = bytes.fromhex(address)
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
                found.append((owner[inode], socket.inet_ntop(family, words), int(port, 16)))
    return found


def test_every_socket_of_the_cluster_is_bound_to_loopback(cluster):
    sockets = _listening_sockets(cluster.pids())
    ports = {port for _, _, port in sockets}
    # The GCS and the dashboard (job server) are among them.
    assert cluster.state["gcs_port"] in ports and cluster.state["dashboard_port"] in ports
    loopback = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}
    exposed = [s for s in sockets if s[1] not in loopback]
    assert not exposed, f"bound beyond loopback: {exposed}"


def test_clients_need_the_cluster_token(cluster, tmp_path):
    # A client with no token: no RAY_AUTH_* and a home without ~/.ray/auth_token.
    bare = {
        k: v for k, v in cluster.env.items() if not k.startswith(("RAY_AUTH_MODE", "RAY_AUTH_TOK"))
    }
    bare["HOME"] = str(tmp_path)
    with pytest.raises(AssertionError, match="Unauthorized: Missing authentication token"):
        cluster.ray("job", "list", env=bare)
    wrong = tmp_path / "wrong_token"
    wrong.write_text("0" * 64)
    with pytest.raises(AssertionError, match="Invalid authentication token"):
        cluster.ray("job", "list", env={**cluster.env, "RAY_AUTH_TOKEN_PATH": str(wrong)})
    # The GCS checks it too, not only the job server.
    with pytest.raises(AssertionError, match="InvalidAuthToken"):
        cluster.ray("status", env=bare)
    assert "Job submission server address" in cluster.ray("job", "list")


# ---- jobs that must fail fast, and a probe of the job's code -------------------------------------

BAD_INPUTS = ("malformed_config", "unknown_loss", "missing_model", "unusable_storage_root")


@pytest.fixture(scope="module")
def quick_jobs(cluster, work, runtime_env):
    """Submit at once: one job per bad input, and one that reports where its code comes from."""
    base = sweep_config("bad", steps=2, every=2)
    cases = {}
    malformed = work / "malformed.yaml"
    malformed.write_text("experiment: [unclosed\nmode: grid\n")
    cases["malformed_config"] = (malformed, work / "results-malformed", "not valid YAML")
    unknown = write_sweep(work, {**base, "experiment": "unknown", "grid": {"losses": ["nope"]}})
    cases["unknown_loss"] = (unknown, work / "results-unknown", "unknown loss 'nope'")
    model_path = "/nonexistent/models/llama-2-7b"
    missing = {**base, "experiment": "missing"}
    missing["trial"] = {**base["trial"], "model": {"preset": None, "path": model_path}}
    cases["missing_model"] = (write_sweep(work, missing), work / "results-missing", model_path)
    # A results root below a regular file cannot be created, by root or anyone.
    blocker = work / "results-blocker"
    blocker.write_text("a file, not a directory\n")
    storage = write_sweep(work, {**base, "experiment": "storage"})
    cases["unusable_storage_root"] = (storage, blocker / "results", str(blocker / "results"))
    for case, (config, results, _) in cases.items():
        cluster.submit(f"bad-{case}", runtime_env, *sweep_command(config, results))
    probe = (
        "import json, os, ray, orchestrator; ray.init(); "
        "task = ray.remote(lambda: __import__('trainables').__file__); "
        "print(json.dumps({'driver': orchestrator.__file__, 'worker': ray.get(task.remote()), "
        "'files': sorted(os.listdir('.'))}))"
    )
    cluster.submit("probe", runtime_env, "python", "-c", probe)
    outcomes = {
        case: (cluster.wait_job(f"bad-{case}", 300), cluster.job_logs(f"bad-{case}"))
        for case in cases
    }
    probe_job = cluster.wait_job("probe", 300)
    return cases, outcomes, probe_job, cluster.job_logs("probe")


def test_a_job_runs_the_code_it_was_submitted_with(quick_jobs):
    *_, job, logs = quick_jobs
    assert job["status"] == "SUCCEEDED", logs[-3000:]
    report = json.loads(next(line for line in logs.splitlines() if line.startswith("{")))
    # The driver and a Ray worker import the uploaded working_dir, not the project checkout.
    for where in ("driver", "worker"):
        assert "/runtime_resources/working_dir_files/" in report[where], report
        assert not report[where].startswith(str(Path(__file__).resolve().parents[2])), report
    assert {"orchestrator", "trainables", "analysis", "cluster", "pyproject.toml"} <= set(
        report["files"]
    )
    assert not {".git", ".venv", "results"} & set(report["files"]), report["files"]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_fails_fast_with_a_clear_error(quick_jobs, case):
    cases, outcomes, *_ = quick_jobs
    config, results, says = cases[case]
    job, logs = outcomes[case]
    assert job["status"] == "FAILED", logs[-3000:]
    assert job["driver_exit_code"] == 2, (job["message"], logs[-3000:])  # bad input, not a crash
    # The CLI's message: a line starting "error:" and the lines after it.
    lines = logs.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert starts, logs[-3000:]
    error = "\n".join(lines[starts[0] :])
    assert says in error, error
    if case != "unusable_storage_root":
        assert str(config) in error  # it names the file
    assert "Traceback" not in logs, logs[-3000:]
    # Nothing launched: the entrypoint never joined the cluster as a Ray driver.
    assert job["job_id"] is None, job
    # Nothing half-written.
    assert not results.exists() or not any(results.iterdir()), sorted(results.rglob("*"))
    if case == "unusable_storage_root":
        assert results.parent.read_text() == "a file, not a directory\n"


# ---- a sweep on both worker nodes, one of its Train workers killed ----------------------------


@pytest.fixture(scope="module")
def two_node_sweep(cluster, work, runtime_env):
    """A grid of two one-worker trials: with one CPU per worker node, each runs on its own
    node. Once a trial has a checkpoint on disk (step 4) its Train worker process is SIGKILLed;
    Ray Train restarts the worker group from that checkpoint (resources.max_failures)."""
    config = sweep_config("twonode", steps=20, every=4, max_failures=1)
    results = work / "results-twonode"
    cluster.submit("twonode", runtime_env, *sweep_command(write_sweep(work, config), results))
    job_id = wait_for(
        "the job's driver", lambda: cluster.jobs().get("twonode", {}).get("job_id"), 180
    )
    final = config["trial"]["train"]["steps"]
    placement: dict[str, set[str]] = {}
    killed: dict = {}

    def watch() -> bool:
        workers = cluster.train_workers(job_id)
        for trial_id, node in workers.values():
            placement.setdefault(trial_id, set()).add(node)
        if not killed:
            steps = stored_steps(results, "twonode")
            for pid, (trial_id, node) in workers.items():
                if 4 <= steps.get(trial_id, -1) < final:
                    os.kill(pid, signal.SIGKILL)
                    killed.update(
                        pid=pid, trial=trial_id, node=node, step=steps[trial_id], at=time.time()
                    )
                    break
        done = cluster.jobs()["twonode"]["status"] in ("SUCCEEDED", "FAILED", "STOPPED")
        return done and bool(killed)

    wait_for("the sweep to run, and a Train worker to be killed", watch, JOB_TIMEOUT_S, every=1)
    job = cluster.wait_job("twonode", JOB_TIMEOUT_S)
    return {
        "config": config,
        "results": results,
        "job": job,
        "logs": cluster.job_logs("twonode"),
        "placement": placement,
        "killed": killed,
        "train_actors": cluster.actors(job_id, "RayTrainWorker"),
        "names": cluster.node_names(),
    }


def test_job_submission_runs_trials_on_both_worker_nodes(two_node_sweep):
    run = two_node_sweep
    assert run["job"]["status"] == "SUCCEEDED", run["logs"][-4000:]
    assert "Ray (cluster)" in run["logs"]  # the driver joined the cluster, not a local Ray
    latest = assert_complete(run["results"], run["config"])
    # Both trials were seen running, on different worker nodes.
    placement = run["placement"]
    assert set(placement) == set(latest["trial_id"]), placement
    nodes = {node for seen in placement.values() for node in seen}
    assert nodes == {"worker-1", "worker-2"}, placement
    train_nodes = {run["names"][a["node_id"]] for a in run["train_actors"]}
    assert train_nodes == {"worker-1", "worker-2"}  # never on the head


def test_killed_train_worker_resumes_from_its_checkpoint(two_node_sweep):
    run = two_node_sweep
    killed, results = run["killed"], run["results"]
    assert run["job"]["status"] == "SUCCEEDED", run["logs"][-4000:]
    dead = [a for a in run["train_actors"] if a["pid"] == killed["pid"]]
    assert len(dead) == 1 and dead[0]["state"] == "DEAD", dead
    # A new worker group replaced the killed one: three Train worker actors for two trials.
    assert len(run["train_actors"]) == 3, [(a["pid"], a["state"]) for a in run["train_actors"]]
    # The trial's rows: no gap, no duplicate (assert_complete), every metric of every step.
    latest = assert_complete(results, run["config"])
    assert killed["trial"] in set(latest["trial_id"])
    # Ray Train recovered it inside the same Tune trial: no Tune restart (attempt stays 0).
    assert metrics(results, "twonode")["attempt"].max() == 0
    # It resumed from its checkpoint, not from scratch: step 0 was reported once, and nothing
    # before the checkpoint it was killed after was reported again (the worker re-reports the
    # checkpoint's own step on resume; the sink keeps one copy).
    steps = reported_steps(results, "twonode", killed["trial"])
    assert_resumed(steps, killed["step"], run["config"])
    recovered = first_new_row(results, "twonode", killed["trial"], killed["step"])
    print(
        f"\nrecovery: Train worker SIGKILLed after step {killed['step']} on {killed['node']}: "
        f"next step stored {recovered - killed['at']:.1f} s later "
        f"(worker group restarted from the step-{killed['step']} checkpoint)"
    )


# ---- the sweep's driver killed, then the job resubmitted ---------------------------------------


@pytest.fixture(scope="module")
def resubmitted_sweep(cluster, work, runtime_env):
    config = sweep_config("resume", steps=20, every=4)
    results = work / "results-resume"
    command = sweep_command(write_sweep(work, config), results)
    cluster.submit("resume-1", runtime_env, *command)
    driver_info = wait_for(
        "the job's driver", lambda: cluster.jobs().get("resume-1", {}).get("driver_info"), 180
    )
    final = config["trial"]["train"]["steps"]
    steps = wait_for(
        "a trial midway",
        lambda: (
            (s := stored_steps(results, "resume")) and any(4 <= v < final for v in s.values()) and s
        ),
        JOB_TIMEOUT_S,
    )
    driver = int(driver_info["pid"])
    with open(f"/proc/{driver}/cmdline", "rb") as fh:
        assert b"orchestrator" in fh.read()  # the sweep's own process
    os.kill(driver, signal.SIGKILL)
    killed_at = time.time()
    first = cluster.wait_job("resume-1", 120)
    # Ray ends the dead driver's trials (their actors are owned by it; a detached actor, such
    # as Ray's autoscaling coordinator, outlives any job) before the new job runs.
    job_id = cluster.jobs()["resume-1"]["job_id"]
    wait_for(
        "the killed job's actors to end",
        lambda: not [a for a in cluster.actors(job_id, alive=True) if not a["is_detached"]],
        120,
    )
    resubmitted_at = time.time()
    cluster.submit("resume-2", runtime_env, *command)
    second = cluster.wait_job("resume-2", JOB_TIMEOUT_S)
    return {
        "config": config,
        "results": results,
        "first": first,
        "second": second,
        "logs": cluster.job_logs("resume-2"),
        "steps_at_kill": steps,
        "killed_at": killed_at,
        "resubmitted_at": resubmitted_at,
    }


def test_killed_driver_then_resubmitted_job_resumes_the_sweep(resubmitted_sweep):
    run = resubmitted_sweep
    assert run["first"]["status"] == "FAILED", run["first"]
    assert run["second"]["status"] == "SUCCEEDED", run["logs"][-4000:]
    assert "numsweep: resuming" in run["logs"]
    # The same trials and steps as an uninterrupted run, each step stored once.
    assert_complete(run["results"], run["config"])
    # The trials that were midway continued from their checkpoints.
    final = run["config"]["trial"]["train"]["steps"]
    midway = {t: s for t, s in run["steps_at_kill"].items() if 4 <= s < final}
    for trial_id, step in midway.items():
        assert_resumed(reported_steps(run["results"], "resume", trial_id), step, run["config"])
    first_new = min(first_new_row(run["results"], "resume", t, s) for t, s in midway.items())
    print(
        f"\nrecovery: sweep driver SIGKILLed with trials at {run['steps_at_kill']}; resubmitted "
        f"{run['resubmitted_at'] - run['killed_at']:.1f} s later; first new step stored "
        f"{first_new - run['resubmitted_at']:.1f} s after the resubmission"
    )


# ---- the trials' controllers lost mid-run, and Ray Train's cleaners with them ------------------


@pytest.fixture(scope="module")
def lost_controllers_sweep(cluster, work, runtime_env):
    """Once both trials have a checkpoint, every Ray Train controller of the sweep and every
    Ray Train placement-group cleaner is SIGKILLed: the state a node crash that took the
    controllers left on CI (their workers' groups held by nobody). Tune restarts both trials;
    numsweep's reaper gives back the groups; both resume from their checkpoints."""
    return kill_controllers_midway(cluster, work, runtime_env, "lostcontrol", JOB_TIMEOUT_S)


def test_lost_controllers_their_trials_resume_and_their_cpus_come_back(lost_controllers_sweep):
    run = lost_controllers_sweep
    assert_control_on_the_head(run["placement"], run.get("actors_seen"))
    assert run["killed"].count("TrainController") == 2, run["killed"]
    assert run["job"]["status"] == "SUCCEEDED", run["logs"][-4000:]
    latest = assert_complete(run["results"], run["config"])
    # Each trial was restarted by Tune once and went on from its checkpoint.
    assert restarts_per_trial(run["results"], "lostcontrol") == dict.fromkeys(latest["trial_id"], 1)
    for trial_id, step in run["steps"].items():
        assert_resumed(reported_steps(run["results"], "lostcontrol", trial_id), step, run["config"])
    # The killed controllers' groups were given back by the driver, with a line saying so.
    assert len(run["orphaned_groups"]) == 2, run["orphaned_groups"]
    for group in run["orphaned_groups"]:
        assert f"numsweep: removed placement group {group[:12]}" in run["logs"], run["logs"][-4000:]
    finished = latest_trials(run["results"], "lostcontrol")["end"].max().timestamp()
    resumed = min(
        first_new_row(run["results"], "lostcontrol", t, s) for t, s in run["steps"].items()
    )
    print(
        f"\nrecovery: both Train controllers and their cleaners SIGKILLed at steps {run['steps']}: "
        f"first new step stored {resumed - run['failed_at']:.1f} s later, sweep done "
        f"{finished - run['failed_at']:.1f} s after the kill"
    )


# ---- a worker node crashes mid-sweep (last: it leaves one worker node) --------------------------


@pytest.fixture(scope="module")
def node_crash_sweep(cluster, work, runtime_env):
    """Once a trial has a checkpoint on disk, its Train worker is frozen where it is and every
    process of the worker node running it is SIGKILLed at once (`local.py stop-node --force`).
    Ray Train restarts its worker group from the checkpoint on the remaining node, once the
    other trial frees its CPU."""
    return crash_node_midway(cluster, work, runtime_env, "nodecrash", JOB_TIMEOUT_S)


def assert_control_on_the_head(
    placement: dict[str, list[str]], actors_seen: list[str] | None = None
) -> None:
    """Every trial's control actors (Tune's trial actor and queue, Ray Train's controller and
    synchronisation actor) ran on the head (orchestrator.run.trial_placement). On failure, every
    actor of the job as listed at that moment. (That list found why two clean clones had seen
    no live `ImplicitFunc`: Ray listed it by its qualified name, which `LocalCluster.actors`
    now shortens.)"""
    # A string, not a dict: pytest shortens the repr of a long object in its report.
    seen = f"placement: {placement}; every actor of the job: " + "; ".join(actors_seen or [])
    assert {"ImplicitFunc", "TrainController"} <= set(placement), seen
    assert {node for nodes in placement.values() for node in nodes} == {"head"}, seen


def test_crashed_worker_node_its_trial_finishes_on_the_other(node_crash_sweep):
    run = node_crash_sweep
    assert_control_on_the_head(run["placement"], run.get("actors_seen"))
    assert not run["survivors"], (
        f"processes of {run['node']} outlived its crash: {run['survivors']}"
    )
    assert run["nodes"][run["node"]]["state"] == "DEAD"
    assert run["job"]["status"] == "SUCCEEDED", run["logs"][-4000:]
    latest = assert_complete(run["results"], run["config"])
    assert run["trial"] in set(latest["trial_id"])
    other = ({"worker-1", "worker-2"} - {run["node"]}).pop()
    names = {n["node_id"]: name for name, n in run["nodes"].items()}
    # The trial was retried on the remaining node: a Train worker beyond the first two, there.
    on_other = [a for a in run["train_actors"] if names[a["node_id"]] == other]
    assert len(run["train_actors"]) >= 3 and len(on_other) >= 2, run["train_actors"]
    steps = reported_steps(run["results"], "nodecrash", run["trial"])
    assert_resumed(steps, run["step"], run["config"])
    # Its controller lived on the head: Ray Train restarted the workers, no Tune restart.
    assert restarts_per_trial(run["results"], "nodecrash") == dict.fromkeys(latest["trial_id"], 0)
    recovered = first_new_row(run["results"], "nodecrash", run["trial"], run["step"])
    finished = latest_trials(run["results"], "nodecrash")["end"].max().timestamp()
    print(
        f"\nrecovery: {run['node']} SIGKILLed with trial {run['trial']} at step {run['step']}: "
        f"its next step stored {recovered - run['failed_at']:.1f} s later on {other} "
        f"(after the other trial freed the CPU); sweep done {finished - run['failed_at']:.1f} s "
        "after the crash"
    )


def test_ray_trains_cleaners_kept_watching(cluster, node_crash_sweep, lost_controllers_sweep):
    """With another Ray instance on the machine, Ray Train's cleaners still found their cluster
    (orchestrator.run.local_ray.cluster_address_env): none of their watching threads died."""
    logs = cluster.dir / "ray" / "head" / "session_latest" / "logs"
    died = [
        err.name
        for err in logs.glob("worker-*.err")
        if "Exception in thread PlacementGroupCleanerMonitor" in err.read_text(errors="replace")
    ]
    assert not died, died


def test_stop_leaves_no_process_behind(cluster):
    starts = [node["pid"] for node in cluster.state["nodes"].values()]
    cluster.stop()
    assert not cluster.pids()
    assert not [p for p in starts if p and running(p)]
    # Nothing listens on the cluster's ports any more.
    for port in (cluster.state["gcs_port"], cluster.state["dashboard_port"]):
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", port))
