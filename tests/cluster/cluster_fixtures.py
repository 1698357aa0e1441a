"""What the cluster tests share: a local multi-node Ray cluster started with cluster/local.py and
driven as a user drives one (Ray's `ray job` and `ray list` command lines, with the cluster's
token), sweep files for small runs, and readers of the Parquet a sweep writes.

Every command has a time limit, and every process a test starts is stopped by pid."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from trainables.worker.report_protocol import REPLAYED_KEY

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "cluster"
LOCAL = CLUSTER / "local.py"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def load_local_module():
    """cluster/local.py as a module (it is a script, not part of an importable package)."""
    spec = importlib.util.spec_from_file_location("numsweep_cluster_local", LOCAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wait_for(what: str, check: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    """Poll `check` until it returns something truthy; AssertionError naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


class LocalCluster:
    """A running cluster/local.py cluster in `directory`."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.state = json.loads((directory / "cluster.json").read_text())
        env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}
        exports = (directory / "env.sh").read_text().splitlines()
        env.update(
            line.removeprefix("export ").split("=", 1)
            for line in exports
            if line.startswith("export ")
        )
        self.env = env
        self.token = Path(env["RAY_AUTH_TOKEN_PATH"]).read_text().strip()
        self.ray_cli = str(Path(sys.executable).with_name("ray"))

    @classmethod
    def start(cls, workers: int = 2, cpus: int = 1) -> LocalCluster:
        # Short: Ray's Unix socket paths under it must stay below the OS limit of ~107 bytes.
        directory = Path(tempfile.mkdtemp(prefix="nsc-", dir="/tmp"))
        out = run_local(directory, "start", "--workers", str(workers), "--cpus", str(cpus))
        if out.returncode != 0:
            run_local(directory, "stop")
            shutil.rmtree(directory, ignore_errors=True)
            raise AssertionError(f"local.py start failed:\n{out.stdout}\n{out.stderr}")
        return cls(directory)

    # ---- local.py --------------------------------------------------------------------------
    def local(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return run_local(self.dir, *args, timeout=timeout)

    def pids(self, node: str | None = None) -> set[int]:
        out = self.local("pids", *([node] if node else []), timeout=60)
        assert out.returncode == 0, out.stderr
        return {int(p) for p in out.stdout.split()}

    def stop(self) -> None:
        out = self.local("stop", timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr

    # ---- Ray's command lines ---------------------------------------------------------------
    def ray(self, *args: str, timeout: float = 120, env: dict | None = None) -> str:
        out = subprocess.run(
            [self.ray_cli, *args],
            env=env or self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if out.returncode != 0:
            raise AssertionError(f"ray {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def api(self, path: str, **params: Any) -> Any:
        """GET from the dashboard's HTTP API (Ray's job and state APIs) with the cluster's token:
        what the `ray job` and `ray list` commands do, without starting a Python per call (the
        tests poll, on a machine whose two cores run the trials)."""
        query = urllib.parse.urlencode(params, doseq=True)
        request = urllib.request.Request(
            f"{self.env['RAY_API_SERVER_ADDRESS']}{path}?{query}",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def list_state(self, resource: str, **filters: str) -> list[dict]:
        """Ray's state API: every actor, node, … (dead ones too) matching `filters`."""
        reply = self.api(
            f"/api/v0/{resource}",
            limit=10000,
            detail="true",
            filter_keys=list(filters),
            filter_predicates=["="] * len(filters),
            filter_values=list(filters.values()),
        )
        return reply["data"]["result"]["result"]

    def nodes(self) -> list[dict]:
        return self.list_state("nodes")

    def node_names(self) -> dict[str, str]:
        """node id -> node name (head, worker-1, …)."""
        return {n["node_id"]: n["node_name"] for n in self.nodes()}

    def jobs(self) -> dict[str, dict]:
        """submission id -> Ray's record of the job."""
        return {j["submission_id"]: j for j in self.api("/api/jobs/") if j.get("submission_id")}

    def actors(self, job_id: str, class_name: str | None = None, alive: bool = False) -> list:
        """A job's actors, each `class_name` the class's own name. Ray's state API gives a class
        defined in a function either that or its qualified name: the same suite listed Tune's
        trial actor as `ImplicitFunc` in most runs and as `wrap_function.<locals>.ImplicitFunc`
        in one clean clone's (stop 52), so `class_name` is matched here, not by the API."""
        filters = {"job_id": job_id}
        if alive:
            filters["state"] = "ALIVE"
        found = []
        for actor in self.list_state("actors", **filters):
            actor["class_name"] = actor["class_name"].rsplit(".", 1)[-1]
            if class_name in (None, actor["class_name"]):
                found.append(actor)
        return found

    # ---- jobs ------------------------------------------------------------------------------
    def submit(self, submission_id: str, runtime_env: Path, *entrypoint: str) -> None:
        """`ray job submit --no-wait` from the project root (the job's working_dir)."""
        self.ray(
            "job",
            "submit",
            "--no-wait",
            "--submission-id",
            submission_id,
            "--runtime-env",
            str(runtime_env),
            "--",
            *entrypoint,
            timeout=180,
        )

    def wait_job(self, submission_id: str, timeout: float) -> dict:
        def finished() -> dict | None:
            job = self.jobs().get(submission_id)
            return job if job and job["status"] in TERMINAL else None

        try:
            return wait_for(f"job {submission_id} to end", finished, timeout, every=2.0)
        except AssertionError as timeout_error:
            raise AssertionError(
                f"{self.diagnose(submission_id)}\n{timeout_error}\n{self.stuck_job(submission_id)}"
            ) from None

    def diagnose(self, submission_id: str) -> str:
        """One line on a job that did not end: which nodes are dead, which placement groups of
        CPUs/GPUs wait, and which hold resources while no live actor of the job runs in them
        (the resources a dead Train controller left), with their nodes."""
        job = self.jobs().get(submission_id, {})
        names = self.node_names()
        dead = sorted(n["node_name"] for n in self.nodes() if n["state"] == "DEAD")
        live = [a for a in self.actors(job.get("job_id") or "") if a["state"] != "DEAD"]
        used = {a.get("placement_group_id") for a in live}
        waiting, orphans = [], []
        for group in self.list_state("placement_groups"):
            if not holds_workers(group):
                continue
            held = [b["unit_resources"] for b in group["bundles"]]
            if group["state"] in ("PENDING", "RESCHEDULING"):
                waiting.append(f"{group['placement_group_id'][:12]} {held}")
            elif group["state"] == "CREATED" and group["placement_group_id"] not in used:
                nodes = sorted({names.get(b["node_id"], "?") for b in group["bundles"]})
                orphans.append(f"{group['placement_group_id'][:12]} {held} on {nodes}")
        controllers = [
            names.get(a["node_id"], "?") for a in live if a["class_name"] == "TrainController"
        ]
        return (
            f"diagnosis: job {submission_id} {job.get('status')}; dead nodes {dead}; "
            f"live Train controllers on {sorted(controllers)}; placement groups waiting: "
            f"{waiting or 'none'}; holding resources with no live actor: {orphans or 'none'}"
        )

    def stuck_job(self, submission_id: str) -> str:
        """What a job that did not end was doing: its log's tail, the nodes and placement groups
        (which CPUs are held, and by what), its actors (the ended ones with why), and the Python
        stacks of its driver and of its live actors (py-spy, which Ray's default extra installs),
        so that a hang seen once on CI can be read rather than guessed at."""
        job = self.jobs().get(submission_id, {})
        names = self.node_names()
        lines = [f"job: {json.dumps(job, default=str)[:2000]}"]
        lines.append("log tail:\n" + self.job_logs(submission_id)[-6000:])
        lines += self.resources_held(names)
        pids = [(job.get("driver_info") or {}).get("pid")]
        for actor in self.actors(job.get("job_id") or ""):
            node = names.get(actor["node_id"], "?")
            where = f"actor {actor['class_name']} pid {actor['pid']} on {node}"
            if actor["state"] == "ALIVE":
                lines.append(where)
                pids.append(actor["pid"])
            else:
                died = (actor.get("death_cause") or {}).get("actor_died_error_context") or {}
                lines.append(f"{where}: {actor['state']} ({died.get('reason', '?')})")
        spy = Path(sys.executable).with_name("py-spy")
        for pid in [p for p in pids if p]:
            out = subprocess.run(
                [str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=60
            )
            lines.append(f"py-spy dump {pid}:\n{out.stdout[:4000]}{out.stderr[-500:]}")
        return "\n".join(lines)

    def resources_held(self, names: dict[str, str]) -> list[str]:
        """A line per node (state, resources) and per placement group (state, and the node and
        resources of each bundle: "-" for one not placed)."""
        lines = [
            f"node {n['node_name']} {n['state']}: {n['resources_total']}" for n in self.nodes()
        ]
        for group in self.list_state("placement_groups"):
            held = [(names.get(b["node_id"], "-"), b["unit_resources"]) for b in group["bundles"]]
            lines.append(
                f"placement group {group['placement_group_id'][:12]} {group['state']}: {held}"
            )
        return lines

    def job_logs(self, submission_id: str) -> str:
        return self.api(f"/api/jobs/{submission_id}/logs")["logs"]

    def train_workers(self, job_id: str) -> dict[int, tuple[str, str]]:
        """Live Ray Train workers of a job that run a trial: pid -> (trial id, node name). Ray
        Train moves each worker into `<session>/artifacts/<run name>`, and numsweep names the
        Train run after the Tune trial."""
        names = self.node_names()
        workers = {}
        for actor in self.actors(job_id, "RayTrainWorker", alive=True):
            try:
                cwd = Path(os.readlink(f"/proc/{actor['pid']}/cwd"))
            except OSError:
                continue  # it ended between the listing and now
            if cwd.parent.name == "artifacts":  # not yet moved there: not training yet
                workers[actor["pid"]] = (cwd.name, names[actor["node_id"]])
        return workers


def describe(pid: int) -> str:
    """A process as a failure message shows it: pid, state, parent and command line."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:160]
    except OSError:
        return f"{pid} (gone)"
    state, ppid = stat[stat.rindex(b")") + 2 :].split()[:2]
    return f"{pid} {state.decode()} ppid {ppid.decode()}: {cmd.decode(errors='replace')}"


def running(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie awaiting its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X")


def run_local(directory: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(LOCAL), "--dir", str(directory), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def runtime_env_without_pip(directory: Path) -> Path:
    """cluster/runtime_env.yaml without its `pip` section. The local cluster's nodes run in the
    project's venv, which has every package; with `pip`, Ray would clone that whole venv (2.4 GB)
    into a virtualenv per node before the first job."""
    env = yaml.safe_load((CLUSTER / "runtime_env.yaml").read_text())
    del env["pip"]
    path = directory / "runtime_env.yaml"
    path.write_text(yaml.safe_dump(env))
    return path


# A tiny grid sweep: two losses, one seed, `steps` steps; a checkpoint at every report.
def sweep_config(experiment: str, *, steps: int = 20, every: int = 4, **resources: Any) -> dict:
    return {
        "experiment": experiment,
        "mode": "grid",
        "seed": 3,
        "trial": {
            "model": {"preset": "tiny", "vocab_size": 512},
            "data": {
                "modules": ["arithmetic__add_or_sub"],
                "n_train": 128,
                "n_test": 32,
                "max_length": 64,
            },
            "train": {
                "steps": steps,
                "micro_batch_size": 8,
                "warmup_steps": 2,
                "checkpoint_every": every,
            },
            "eval": {"every": every, "batch_size": 32, "generate_examples": 8, "max_new_tokens": 6},
        },
        "grid": {"losses": ["mle", "del"], "seeds": [3]},
        "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, **resources},
    }


def write_sweep(directory: Path, config: dict) -> Path:
    path = directory / f"{config['experiment']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def sweep_command(config: Path, results: Path, *extra: str) -> list[str]:
    return ["python", "-m", "orchestrator", "sweep", str(config), "--results", str(results), *extra]


# ---- what a sweep wrote ------------------------------------------------------------------------


def metrics(results: Path, experiment: str) -> pl.DataFrame | None:
    parts = sorted((results / "metrics" / f"experiment={experiment}").glob("part-*.parquet"))
    return pl.read_parquet(parts) if parts else None


def trials(results: Path, experiment: str) -> pl.DataFrame:
    parts = sorted((results / "trials" / f"experiment={experiment}").glob("part-*.parquet"))
    return pl.read_parquet(parts)


def latest_trials(results: Path, experiment: str) -> pl.DataFrame:
    """Each trial's last state row."""
    return trials(results, experiment).sort("ts").group_by("trial_id").last()


def stored_steps(results: Path, experiment: str) -> dict[str, int]:
    """trial id -> the last step with rows on disk."""
    table = metrics(results, experiment)
    if table is None:
        return {}
    return dict(table.group_by("trial_id").agg(pl.col("step").max()).iter_rows())


def reported_steps(results: Path, experiment: str, trial_id: str) -> list[tuple[int, bool]]:
    """Every step a trial reported to Ray Tune, in order, repeats included (Tune's own log), and
    whether it was a report a resumed trial sent again for a step it had trained before."""
    logs = list((results / "experiments" / experiment / "ray" / experiment).glob("*/result.json"))
    steps = []
    for log in logs:
        for line in log.read_text().splitlines():
            result = json.loads(line)
            if result.get("trial_id") == trial_id and "step" in result:
                steps.append((int(result["step"]), bool(result.get(REPLAYED_KEY))))
    return steps


def expected_steps(config: dict) -> list[int]:
    """The steps an uninterrupted trial reports: 0, every `eval.every`, and the last."""
    steps, every = config["trial"]["train"]["steps"], config["trial"]["eval"]["every"]
    return sorted({0, *range(every, steps + 1, every), steps})


def assert_complete(results: Path, config: dict) -> pl.DataFrame:
    """Every arm of the grid finished, and stored every step it reports exactly once, as an
    uninterrupted run would: the same (loss, seed, step) set, no gap, no duplicate row."""
    experiment = config["experiment"]
    latest = latest_trials(results, experiment)
    arms = {(loss, seed) for loss in config["grid"]["losses"] for seed in config["grid"]["seeds"]}
    assert set(zip(latest["loss"], latest["seed"], strict=True)) == arms, latest
    assert latest.height == len(arms), latest  # no trial created twice
    assert set(latest["status"]) == {"TERMINATED"}, latest.select("trial_id", "status", "error")
    table = metrics(results, experiment)
    assert table is not None
    duplicates = table.group_by("trial_id", "step", "metric").len().filter(pl.col("len") > 1)
    assert duplicates.height == 0, duplicates
    steps = expected_steps(config)
    for (trial_id,), rows in table.group_by("trial_id"):
        assert sorted(rows["step"].unique()) == steps, (trial_id, sorted(rows["step"].unique()))
        # Each step carries the same metrics an uninterrupted run reports there.
        for step, names in rows.group_by("step").agg(pl.col("metric")).iter_rows():
            names = set(names)
            assert "eval/test/ce" in names, (trial_id, step)
            assert ("train/loss" in names) == (step > 0), (trial_id, step)
            assert ("model/params_total" in names) == (step == 0), (trial_id, step)
    return latest


def assert_resumed(reports: list[tuple[int, bool]], stored_at_failure: int, config: dict) -> None:
    """A trial's reports (step, replayed) in order, after a failure once step
    `stored_at_failure` was stored: it resumed from a checkpoint at or past that step, not from
    scratch. Every step was reported; step 0 was trained once, and only steps from that
    checkpoint on were trained twice (a restarted worker first sends its checkpoint's latest
    reports again, marked replayed; the sink keeps one copy of each step)."""
    assert sorted({step for step, _ in reports}) == expected_steps(config), reports
    trained = [step for step, replayed in reports if not replayed]
    assert trained.count(0) == 1, reports
    repeated = {s for s in trained if trained.count(s) > 1}
    assert all(s >= stored_at_failure for s in repeated), (stored_at_failure, reports)


def restarts_per_trial(results: Path, experiment: str) -> dict[str, int]:
    """trial id -> how many times Tune started it again (its RUNNING rows beyond the first)."""
    starts = trials(results, experiment).filter(pl.col("status") == "RUNNING")
    return dict(starts.group_by("trial_id").len().with_columns(pl.col("len") - 1).iter_rows())


def holds_workers(group: dict) -> bool:
    """Whether a placement group (a state API row) holds CPUs or GPUs: Ray Train workers' group,
    not a Tune trial's (memory only)."""
    return any(
        "CPU" in b["unit_resources"] or "GPU" in b["unit_resources"] for b in group["bundles"]
    )


def first_new_row(results: Path, experiment: str, trial_id: str, after_step: int) -> float:
    """When the first row of `trial_id` past `after_step` was stored (epoch seconds)."""
    table = metrics(results, experiment)
    assert table is not None
    rows = table.filter((pl.col("trial_id") == trial_id) & (pl.col("step") > after_step))
    return rows["ts"].min().timestamp()


# ---- failures mid-sweep (the tests and bench/node_crash.py share them) ---------------------------

# The actors a trial needs alive to go on, besides its Train workers: Tune's trial actor and its
# result queue, Ray Train's controller and the controller's synchronisation actor.
CONTROL_ACTORS = ("ImplicitFunc", "_QueueActor", "TrainController", "SynchronizationActor")


def control_actors(cluster: LocalCluster, job_id: str) -> dict[str, list[str]]:
    """Where a job's live control actors are: class name -> node names."""
    names = cluster.node_names()
    where: dict[str, list[str]] = {}
    for actor in cluster.actors(job_id, alive=True):
        if actor["class_name"] in CONTROL_ACTORS:
            where.setdefault(actor["class_name"], []).append(names.get(actor["node_id"], "?"))
    return {k: sorted(v) for k, v in sorted(where.items())}


def actors_seen(cluster: LocalCluster, job_id: str) -> list[str]:
    """Every actor of the job as the state API lists it (class, state, node): what a placement
    assertion prints, so that a control actor missing from the live ones says where it went."""
    names = cluster.node_names()
    return sorted(
        f"{a['class_name']} {a['state']} {names.get(a['node_id'], '?')}"
        for a in cluster.actors(job_id)
    )


def start_midway(
    cluster: LocalCluster,
    work: Path,
    runtime_env: Path,
    experiment: str,
    timeout: float,
    every_trial: bool = False,
) -> dict:
    """Submit the two-trial sweep (each trial one 1-CPU worker, so each takes one worker node)
    and return once both trials are training and one (`every_trial`: each) has a checkpoint on
    disk (step 4) and steps still to go. Each trial has 20 steps, or 80 with `every_trial`: one
    trial's start can lag the other's by longer than 16 steps take (with 40 steps, a clean
    clone's suite once waited 420 s for both to be midway at once). A timeout says what it saw
    last: each trial's stored step and the nodes of the Train workers."""
    steps = 80 if every_trial else 20
    config = sweep_config(experiment, steps=steps, every=4, max_failures=2, trial_max_failures=2)
    results = work / f"results-{experiment}"
    cluster.submit(experiment, runtime_env, *sweep_command(write_sweep(work, config), results))

    def driver_started() -> str | None:
        job = cluster.jobs().get(experiment, {})
        # A job that ended before its driver started says why (e.g. `python` not the venv's).
        assert job.get("job_id") or job.get("status") not in TERMINAL, job.get("message")
        return job.get("job_id")

    job_id = wait_for("the job's driver", driver_started, 180)
    final = config["trial"]["train"]["steps"]

    seen: dict[str, object] = {}

    def midway():
        steps = stored_steps(results, experiment)
        workers = cluster.train_workers(job_id)
        seen.update(steps=steps, workers=list(workers.values()))
        ready = [
            (t, node, pid) for pid, (t, node) in workers.items() if 4 <= steps.get(t, -1) < final
        ]
        if len(workers) == 2 and ready and (len(ready) == 2 or not every_trial):
            return sorted(ready, key=lambda r: steps[r[0]])  # the most steps to go first
        return None

    try:
        ready = wait_for("a trial midway", midway, timeout, every=1)
    except AssertionError as err:
        raise AssertionError(f"{err}; last seen: {seen}") from None
    trial_id, node, pid = ready[0]
    return {
        "config": config,
        "results": results,
        "job_id": job_id,
        "trial": trial_id,
        "node": node,
        "worker_pid": pid,
        "worker_pids": [r[2] for r in ready],
    }


def end_of(cluster: LocalCluster, run: dict, failed_at: float, timeout: float) -> dict:
    """Wait for the job of `run` (from `start_midway`) to end, and add what happened to it."""
    experiment = run["config"]["experiment"]
    job = cluster.wait_job(experiment, timeout)
    return {
        **run,
        "job": job,
        "logs": cluster.job_logs(experiment),
        "failed_at": failed_at,
        "train_actors": cluster.actors(run["job_id"], "RayTrainWorker"),
        "nodes": {n["node_name"]: n for n in cluster.nodes()},
    }


def crash_node_midway(
    cluster: LocalCluster, work: Path, runtime_env: Path, experiment: str, timeout: float
) -> dict:
    """Once a trial has a checkpoint on disk, freeze its Train worker (SIGSTOP, so that it is
    still midway when its node dies), SIGKILL every process of the worker node running it at
    once (`local.py stop-node --force`), and wait up to `timeout` s for the job to end (an
    AssertionError carrying the diagnosis otherwise)."""
    run = start_midway(cluster, work, runtime_env, experiment, timeout)
    # Freeze the trial's Train worker where it was seen midway: what follows (the placement, the
    # node's processes, a `local.py` start) took long enough under load for a trial's last 16
    # steps to run, and a trial that ended before its node died is not retried (stop 64's CI:
    # two Train workers, not three).
    os.kill(run["worker_pid"], signal.SIGSTOP)
    run["placement"] = control_actors(cluster, run["job_id"])
    run["actors_seen"] = actors_seen(cluster, run["job_id"])
    node_pids = cluster.pids(run["node"])
    run["step"] = stored_steps(run["results"], experiment)[run["trial"]]
    crashed_at = time.time()
    out = cluster.local("stop-node", run["node"], "--force", timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # A SIGKILLed process can take a moment to finish exiting (state R, its memory and command
    # line already gone, reparented to init): seen as a "survivor" right after the kill on a
    # loaded machine. Outliving the crash means still running 10 s later.
    deadline = time.monotonic() + 10
    while any(running(p) for p in node_pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    run["survivors"] = [describe(p) for p in sorted(node_pids) if running(p)]
    return end_of(cluster, run, crashed_at, timeout)


def kill_controllers_midway(
    cluster: LocalCluster, work: Path, runtime_env: Path, experiment: str, timeout: float
) -> dict:
    """Once both trials have a checkpoint on disk, freeze their Train workers, SIGKILL every Ray
    Train controller of the sweep and every Ray Train placement-group cleaner (what a lost node
    that held the controllers did, with the cleaners dead as CI's were), while the Train
    workers' nodes live on, and let the workers go on; wait up to `timeout` s for the job to
    end. The workers' placement groups are then held by no live actor: only numsweep's reaper
    can give their CPUs back to the restarted trials."""
    run = start_midway(cluster, work, runtime_env, experiment, timeout, every_trial=True)
    # Both trials' Train workers frozen until their controllers are dead: one trial can be
    # 70 steps ahead of the other, and a trial that ends before the kill loses no controller.
    for pid in run["worker_pids"]:
        os.kill(pid, signal.SIGSTOP)
    run["placement"] = control_actors(cluster, run["job_id"])
    run["actors_seen"] = actors_seen(cluster, run["job_id"])
    groups = [
        g["placement_group_id"]
        for g in cluster.list_state("placement_groups")
        if g["state"] == "CREATED" and g["creator_job_id"] == run["job_id"] and holds_workers(g)
    ]
    victims = [
        a
        for a in cluster.actors(run["job_id"], alive=True)
        if a["class_name"] in ("TrainController", "PlacementGroupCleaner")
    ]
    run["steps"] = stored_steps(run["results"], run["config"]["experiment"])
    killed_at = time.time()
    for actor in victims:
        os.kill(int(actor["pid"]), signal.SIGKILL)
    for pid in run["worker_pids"]:  # on, as workers whose controller died mid-run
        if running(pid):
            os.kill(pid, signal.SIGCONT)
    run["killed"] = sorted(a["class_name"] for a in victims)
    run["orphaned_groups"] = groups
    return end_of(cluster, run, killed_at, timeout)
