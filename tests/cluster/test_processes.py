"""How cluster/local.py finds (and so stops) a node's processes, on real processes without Ray:
a node is its `ray start` process with that process's group and descendants, plus orphans that
carry the node's environment marks or write their output into its Ray temp dir; never an
unrelated process, another node's, or the caller's own ancestors. And its command line's
refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cluster.cluster_fixtures import load_local_module, run_local, wait_for

local = load_local_module()

SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]
# A stand-in for `ray start --block`: a daemon in its own process group, a worker process in a
# session of its own (as Ray's workers are), and on SIGTERM it stops the daemon, not the worker.
START = f"""
import signal, subprocess, sys, time
daemon = subprocess.Popen({SLEEP!r})
worker = subprocess.Popen({SLEEP!r}, start_new_session=True)
def stop(*_):
    daemon.terminate()
    daemon.wait()
    sys.exit(1)
signal.signal(signal.SIGTERM, stop)
print(daemon.pid, worker.pid, flush=True)
time.sleep(120)
"""


def _spawn(command: list[str], **kwargs) -> subprocess.Popen:
    """`command` started, returned once the kernel shows its environment. Popen returns when the
    child's exec has closed its close-on-exec pipe, which the kernel does before it lays out the
    new program's environment: until then /proc/<pid>/environ reads empty, and a process found
    by its environment is not found (seen once in a clean clone's suite, under load)."""
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, **kwargs)
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{process.pid}/environ").read_bytes():
        assert time.monotonic() < deadline, f"pid {process.pid}: no environment after 10 s"
        time.sleep(0.01)
    return process


@pytest.fixture
def fake_cluster(tmp_path):
    """Two nodes whose `ray start` stand-ins run as local.py runs them: own session, marks."""
    cluster = local.Cluster(tmp_path / "c")
    starts: dict[str, subprocess.Popen] = {}
    for name in ("head", "worker-1"):
        cluster.temp_dir(name).mkdir(parents=True)
        starts[name] = _spawn(
            [sys.executable, "-c", START],
            env={**os.environ, local.MARK_CLUSTER: str(cluster.dir), local.MARK_NODE: name},
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        cluster.nodes[name] = {"pid": starts[name].pid, "args": []}
    cluster.save()
    children = {name: [int(p) for p in s.stdout.readline().split()] for name, s in starts.items()}
    yield cluster, starts, children
    for start in starts.values():
        start.kill()
        start.wait()
    for pid in local.cluster_pids(cluster):
        os.kill(pid, signal.SIGKILL)


def test_a_node_is_its_start_process_its_group_and_its_descendants(fake_cluster):
    cluster, starts, children = fake_cluster
    head = local.cluster_pids(cluster, "head")
    assert head == {starts["head"].pid, *children["head"]}
    worker = local.cluster_pids(cluster, "worker-1")
    assert worker == {starts["worker-1"].pid, *children["worker-1"]}
    assert local.cluster_pids(cluster) == head | worker


def test_orphans_are_found_by_output_or_environment_strangers_are_not(fake_cluster):
    cluster, *_ = fake_cluster
    log = open(cluster.temp_dir("worker-1") / "worker.out", "wb")  # noqa: SIM115 (held open)
    # None of these descends from a node: this test starts each in a session of its own.
    by_output = _spawn(SLEEP, stdout=log, start_new_session=True)
    marks = {local.MARK_CLUSTER: str(cluster.dir), local.MARK_NODE: "worker-1"}
    by_marks = _spawn(SLEEP, env={**os.environ, **marks}, start_new_session=True)
    elsewhere = {**marks, local.MARK_CLUSTER: "/another/cluster"}
    stranger = _spawn(SLEEP, env={**os.environ, **elsewhere}, start_new_session=True)
    try:
        worker = local.cluster_pids(cluster, "worker-1")
        assert {by_output.pid, by_marks.pid} <= worker
        assert stranger.pid not in local.cluster_pids(cluster)
        assert not {by_output.pid, by_marks.pid} & local.cluster_pids(cluster, "head")
    finally:
        for proc in (by_output, by_marks, stranger):
            proc.kill()
            proc.wait()
        log.close()


def test_the_callers_own_ancestors_are_never_listed(fake_cluster):
    cluster, *_ = fake_cluster
    # A shell carrying the head's marks (as if started inside the node) lists the head's pids.
    marks = {local.MARK_CLUSTER: str(cluster.dir), local.MARK_NODE: "head"}
    command = f'echo "$$"; exec {sys.executable} {local.__file__} --dir {cluster.dir} pids head'
    out = subprocess.run(
        ["bash", "-c", command],
        env={**os.environ, **marks},
        capture_output=True,
        text=True,
        timeout=60,
    )
    shell, *listed = (int(p) for p in out.stdout.split())
    assert shell not in listed
    assert set(listed) == local.cluster_pids(cluster, "head")


def test_a_crash_kills_all_of_the_node_and_nothing_else(fake_cluster):
    cluster, starts, _ = fake_cluster
    head = local.cluster_pids(cluster, "head")
    local.stop_node(cluster, "worker-1", force=True)
    assert not local.cluster_pids(cluster, "worker-1")
    assert starts["worker-1"].wait(timeout=10) == -signal.SIGKILL
    assert all(local._alive(pid) for pid in head)
    # The pid is forgotten: once gone, the number may be reused by an unrelated process.
    assert local.Cluster(cluster.dir).nodes["worker-1"]["pid"] is None


def test_a_graceful_stop_sigterms_the_start_then_kills_what_it_left(fake_cluster):
    cluster, starts, children = fake_cluster
    daemon, worker = children["head"]
    local.stop_node(cluster, "head", grace=2.0)
    assert starts["head"].wait(timeout=10) == 1  # its SIGTERM handler ran
    # The worker it left behind was found (by its marks, though orphaned) and killed.
    wait_for("the orphaned worker to go", lambda: not local._alive(worker), 10)
    assert not local._alive(daemon)
    assert not local.cluster_pids(cluster, "head")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["stop-node", "worker-9"], "no node 'worker-9'"),
        (["start-node", "head"], "start-node takes a worker name"),
        (["start", "--workers", "-1"], "--workers must be >= 0"),
        (["start-node", "worker-3"], "no cluster in"),
    ],
)
def test_command_line_refusals_name_the_problem(tmp_path, args, says):
    out = run_local(tmp_path / "c", *args, timeout=60)
    assert out.returncode == 1, out
    assert says in out.stderr
