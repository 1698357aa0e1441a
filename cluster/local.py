"""A multi-node Ray cluster on one machine: a head and N worker nodes, each its own
`ray start --block` process with its own resources and Ray temp dir, all on 127.0.0.1, the
dashboard (which serves `ray job submit`) on 127.0.0.1 only, and Ray's token authentication on
with a token made for this cluster. For trying numsweep's cluster path, and for its tests.
Needs the project's venv (Ray) active; psutil (the process table, not Linux's /proc) and the
stdlib otherwise.

    python cluster/local.py start      [--dir D] [--workers N] [--cpus C] [--gpus G] [--head-cpus C]
    python cluster/local.py stop       [--dir D]          every node, then any straggler, by pid
    python cluster/local.py stop-node  NAME [--dir D] [--force]
                                       SIGTERM the node's `ray start` (Ray drains the node, then
                                       stops it: a scaled-down or preempted machine); --force:
                                       SIGKILL every process of the node at once (a crash)
    python cluster/local.py start-node NAME [--dir D] [--cpus C] [--gpus G]   (re)start a worker
    python cluster/local.py status     [--dir D]          nodes, pids, `ray status`
    python cluster/local.py pids       [--dir D] [NAME]   live processes of the cluster (or node)

Nodes are named head, worker-1 … worker-N. D defaults to $NUMSWEEP_CLUSTER_DIR, else
/tmp/numsweep-cluster (keep it short: Ray's Unix sockets live under it). `start` writes
D/env.sh; `source D/env.sh` sets what a client needs: RAY_ADDRESS (the GCS, for
`python -m orchestrator sweep`), RAY_API_SERVER_ADDRESS (the job server, for `ray job submit`),
RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=D/auth_token.

Only this cluster's processes are ever signalled, found by pid (see `cluster_pids`). `ray stop`
is not used: it stops every Ray process of the machine, whoever started it.

Loopback only: Ray 2.60 rewrites 127.0.0.1 to the host's routable address unless
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, and with that setting its CLI refuses to start a worker
node. Both read one flag, in different modules; worker nodes are therefore started through
`python cluster/local.py ray start …`, Ray's own CLI with the setting at 0 everywhere except in
the CLI module's check (`run_ray_cli`, through `compat.ray_private.ray_cli_main`). Real
multi-host clusters need none of this.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import psutil

from compat.ray_private import LOOPBACK_FLAG, ray_cli_main

DEFAULT_DIR = "/tmp/numsweep-cluster"
LOOPBACK = "127.0.0.1"
MARK_CLUSTER = "NUMSWEEP_LOCAL_CLUSTER"
MARK_NODE = "NUMSWEEP_LOCAL_NODE"
START_TIMEOUT_S = 120.0
# A SIGTERMed node drains first: no new work, and running work gets this long (Ray's
# RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S, 30 s by default, unless the environment sets it); what
# is left of the node STOP_AFTER_DRAIN_S after that is SIGKILLed.
DRAIN_S = 10
STOP_AFTER_DRAIN_S = 30.0
# Each node's object store: Ray's default is 30% of memory per node, and all nodes share one
# machine here.
OBJECT_STORE_BYTES = 512 * 2**20


class ClusterError(RuntimeError):
    """A cluster that cannot be started or stopped as asked; the message says why."""


# ---- state ------------------------------------------------------------------------------------


class Cluster:
    """The state of one local cluster, kept in `DIR/cluster.json`."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory).expanduser().resolve()
        self.file = self.dir / "cluster.json"
        self.state: dict = json.loads(self.file.read_text()) if self.file.exists() else {}

    def save(self) -> None:
        temporary = self.file.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.state, indent=2, sort_keys=True))
        temporary.replace(self.file)

    @property
    def nodes(self) -> dict[str, dict]:
        return self.state.setdefault("nodes", {})

    def temp_dir(self, name: str) -> Path:
        return self.dir / "ray" / name

    def log(self, name: str) -> Path:
        return self.dir / "nodes" / f"{name}.log"

    def client_env(self) -> dict[str, str]:
        """What a client (a shell, `ray job submit`, a test) needs to reach the cluster."""
        return {
            "RAY_ADDRESS": f"{LOOPBACK}:{self.state['gcs_port']}",
            "RAY_API_SERVER_ADDRESS": f"http://{LOOPBACK}:{self.state['dashboard_port']}",
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(self.token),
            LOOPBACK_FLAG: "0",
        }

    @property
    def token(self) -> Path:
        return self.dir / "auth_token"

    def node_env(self, name: str) -> dict[str, str]:
        """The environment of a node's `ray start`, and so of every Ray process and job on it."""
        # RAY_AUTH_TOKEN would take precedence over this cluster's token file; RAY_ADDRESS would
        # point the node elsewhere.
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN", "RAY_ADDRESS")}
        env.update(
            {
                LOOPBACK_FLAG: "0",
                "RAY_AUTH_MODE": "token",
                "RAY_AUTH_TOKEN_PATH": str(self.token),
                "RAY_USAGE_STATS_ENABLED": "0",
                MARK_CLUSTER: str(self.dir),
                MARK_NODE: name,
            }
        )
        # A busy machine (all nodes share its cores) can take longer than Ray's 30 s to register
        # a raylet; give it time rather than fail the node.
        env.setdefault("RAY_raylet_start_wait_time_s", "120")
        # A SIGTERMed node is drained (no new work; running work gets this long) before it
        # stops: Ray's default is 30 s, longer than a local cluster needs.
        env.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", str(DRAIN_S))
        return env


# ---- processes ----------------------------------------------------------------------------


def _process_table() -> dict[int, dict]:
    """Every live process psutil may read: ppid, pgid, environment, and the files its stdout and
    stderr write to (on macOS, where psutil gives no descriptor numbers, every open file)."""
    table: dict[int, dict] = {}
    attrs = ["ppid", "status", "environ", "open_files"]
    for process in psutil.process_iter(attrs, ad_value=None):
        info = process.info
        if info["status"] in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD, None):
            continue  # exited (a zombie until its parent reaps it): nothing left to stop
        try:
            pgid = os.getpgid(process.pid)
        except OSError:
            continue  # gone since it was listed
        table[process.pid] = {
            "ppid": info["ppid"],
            "pgid": pgid,
            "environ": info["environ"] or {},
            "outputs": [f.path for f in info["open_files"] or () if f.fd in (1, 2, -1)],
        }
    return table


def _ancestors(table: dict[int, dict], pid: int) -> set[int]:
    seen: set[int] = set()
    while pid in table and pid not in seen:
        seen.add(pid)
        pid = table[pid]["ppid"]
    return seen


def cluster_pids(cluster: Cluster, node: str | None = None) -> set[int]:
    """Live processes of the cluster (or of one node), never this process or its ancestors.

    A node's processes: its `ray start` process, that process group and all descendants (Ray's
    daemons, worker processes and the jobs they run); and, so that orphans are found too, any
    process whose environment carries the node's marks (Ray's daemons) or whose stdout or stderr
    is a file in the node's Ray temp dir (Ray's worker processes, whose environment Ray
    overwrites with their process title)."""
    table = _process_table()
    names = [node] if node else list(cluster.nodes)
    members: set[int] = set()
    for name in names:
        root = cluster.nodes.get(name, {}).get("pid")
        temp = f"{cluster.temp_dir(name)}/"
        marks = {MARK_CLUSTER: str(cluster.dir), MARK_NODE: name}
        for pid, info in table.items():
            if (
                (root is not None and root in (pid, info["pgid"]))
                or marks.items() <= info["environ"].items()
                or any(out.startswith(temp) for out in info["outputs"])
            ):
                members.add(pid)
    grew = True
    while grew:
        grew = False
        for pid, info in table.items():
            if pid not in members and info["ppid"] in members:
                members.add(pid)
                grew = True
    return members - _ancestors(table, os.getpid())


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        # A zombie (exited, not yet reaped by its parent) is not alive.
        return psutil.Process(pid).status() not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _signal(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(cluster: Cluster, node: str | None, timeout: float) -> set[int]:
    """Wait up to `timeout` s for the cluster's (or a node's) processes to end; what is left."""
    deadline = time.monotonic() + timeout
    while True:
        left = {pid for pid in cluster_pids(cluster, node) if _alive(pid)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.25)


# ---- starting -----------------------------------------------------------------------------


def free_ports(n: int) -> list[int]:
    """`n` distinct free TCP ports on 127.0.0.1 (held open until all are chosen)."""
    with contextlib.ExitStack() as stack:
        held = []
        for _ in range(n):
            sock = stack.enter_context(socket.socket())
            sock.bind((LOOPBACK, 0))
            held.append(sock.getsockname()[1])
        return held


def _ray_start(cluster: Cluster, name: str, head: bool, args: Sequence[str]) -> int:
    """Run `ray start --block ARGS` for node `name` in its own session; return once Ray says the
    node runs (or raise ClusterError with the end of its log)."""
    if _alive(cluster.nodes.get(name, {}).get("pid")):
        raise ClusterError(f"node {name} already runs (pid {cluster.nodes[name]['pid']})")
    log = cluster.log(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    cluster.temp_dir(name).mkdir(parents=True, exist_ok=True)
    offset = log.stat().st_size if log.exists() else 0  # a restarted node appends to its log
    # The head runs Ray's CLI as it is; a worker node the loopback-enabled one (module docstring).
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"] if head else [sys.executable, __file__]
    command = [
        *ray_cli,
        *([] if head else ["ray"]),
        "start",
        "--block",
        f"--node-ip-address={LOOPBACK}",
        f"--node-name={name}",
        f"--temp-dir={cluster.temp_dir(name)}",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--min-worker-port=0",
        "--max-worker-port=0",
        "--disable-usage-stats",
        "--log-style=record",
        *args,
    ]
    with open(log, "ab") as out:
        process = subprocess.Popen(
            command,
            env=cluster.node_env(name),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    cluster.nodes[name] = {"pid": process.pid, "args": list(args)}
    cluster.save()
    deadline = time.monotonic() + START_TIMEOUT_S
    while b"Ray runtime started" not in log.read_bytes()[offset:]:
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_bytes()[offset:].decode(errors="replace").splitlines()[-30:]
            stop_node(cluster, name, force=True)
            raise ClusterError(f"node {name} did not start (log {log}):\n" + "\n".join(tail))
        time.sleep(0.25)
    print(f"local.py: {name} started (pid {process.pid}: {' '.join(args)})", flush=True)
    return process.pid


def start_worker(cluster: Cluster, name: str, cpus: int, gpus: int) -> int:
    if "gcs_port" not in cluster.state:
        raise ClusterError(f"no cluster in {cluster.dir} (run: local.py start)")
    (agent,) = free_ports(1)
    return _ray_start(
        cluster,
        name,
        head=False,
        args=[
            f"--address={LOOPBACK}:{cluster.state['gcs_port']}",
            f"--num-cpus={cpus}",
            f"--num-gpus={gpus}",
            f"--dashboard-agent-listen-port={agent}",
        ],
    )


def start_cluster(cluster: Cluster, workers: int, cpus: int, gpus: int, head_cpus: int) -> None:
    if _alive(cluster.nodes.get("head", {}).get("pid")):
        raise ClusterError(f"a cluster already runs in {cluster.dir}")
    cluster.dir.mkdir(parents=True, exist_ok=True)
    cluster.dir.chmod(0o700)
    token = cluster.token
    if not token.exists():
        # Ray's own token format (`ray get-auth-token --generate`): 256 random bits, hex.
        token.touch(mode=0o600)
        token.write_text(secrets.token_hex(32))
    gcs, dashboard, client, agent = free_ports(4)
    cluster.state = {"gcs_port": gcs, "dashboard_port": dashboard, "nodes": {}}
    cluster.save()
    try:
        _ray_start(
            cluster,
            "head",
            head=True,
            args=[
                "--head",
                f"--port={gcs}",
                f"--num-cpus={head_cpus}",
                "--num-gpus=0",
                "--include-dashboard=true",
                f"--dashboard-host={LOOPBACK}",
                f"--dashboard-port={dashboard}",
                f"--ray-client-server-port={client}",
                f"--dashboard-agent-listen-port={agent}",
            ],
        )
        for i in range(1, workers + 1):
            start_worker(cluster, f"worker-{i}", cpus, gpus)
    except BaseException:
        stop_cluster(cluster)
        raise
    env = cluster.client_env()
    (cluster.dir / "env.sh").write_text(
        f"# Reach the local cluster in {cluster.dir}: source this file.\n"
        "unset RAY_AUTH_TOKEN  # it would take precedence over this cluster's token file\n"
        + "".join(f"export {k}={v}\n" for k, v in env.items())
    )
    print(
        f"local.py: cluster up: head + {workers} worker node(s); job server "
        f"{env['RAY_API_SERVER_ADDRESS']}; source {cluster.dir}/env.sh",
        flush=True,
    )


# ---- stopping -----------------------------------------------------------------------------


def _grace_s() -> float:
    drain = float(os.environ.get("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", DRAIN_S))
    return drain + STOP_AFTER_DRAIN_S


def stop_node(
    cluster: Cluster, name: str, *, force: bool = False, grace: float | None = None
) -> None:
    """Stop one node: SIGTERM its `ray start` (a graceful drain), or with `force` SIGKILL all its
    processes at once; either way SIGKILL whatever is left after `grace` seconds."""
    grace = _grace_s() if grace is None else grace
    pid = cluster.nodes.get(name, {}).get("pid")
    if force:
        _signal(cluster_pids(cluster, name), signal.SIGKILL)
    elif _alive(pid):
        _signal([pid], signal.SIGTERM)
    left = _wait_gone(cluster, name, min(grace, 10.0) if force else grace)
    if left:
        print(f"local.py: {name}: SIGKILL {sorted(left)} after the grace period", file=sys.stderr)
        _signal(left, signal.SIGKILL)
        left = _wait_gone(cluster, name, 10.0)
        if left:
            raise ClusterError(f"processes of node {name} survive SIGKILL: {sorted(left)}")
    if name in cluster.nodes:
        # Forget the pid: once it is gone the number may be reused by an unrelated process.
        cluster.nodes[name]["pid"] = None
        cluster.save()
    print(f"local.py: {name} stopped", flush=True)


def stop_cluster(cluster: Cluster) -> None:
    """Stop every node (workers first), then any process of the cluster that is left."""
    names = sorted(cluster.nodes, key=lambda n: (n == "head", n))
    for name in names:
        stop_node(cluster, name)
    left = _wait_gone(cluster, None, 0.0)
    if left:
        _signal(left, signal.SIGTERM)
        left = _wait_gone(cluster, None, 10.0)
        _signal(left, signal.SIGKILL)
        left = _wait_gone(cluster, None, 10.0)
        if left:
            raise ClusterError(f"processes of the cluster survive SIGKILL: {sorted(left)}")
    print(f"local.py: cluster in {cluster.dir} stopped", flush=True)


# ---- Ray's CLI on loopback ----------------------------------------------------------------


def run_ray_cli(argv: Sequence[str]) -> int:
    """Ray's `ray` command with every address kept on 127.0.0.1 and worker nodes allowed.

    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 keeps every address loopback, in this process and in every
    Ray process it starts; only the CLI module is shown the flag as on, which lifts nothing but
    its refusal to start a worker node."""
    if os.environ.get(LOOPBACK_FLAG) != "0":
        raise ClusterError(f"`local.py ray` needs {LOOPBACK_FLAG}=0 in its environment")
    return ray_cli_main(argv)


# ---- command line -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="local.py", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    parser.add_argument(
        "--dir",
        default=os.environ.get("NUMSWEEP_CLUSTER_DIR", DEFAULT_DIR),
        help=f"the cluster's state, logs and Ray temp dirs (default {DEFAULT_DIR})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="start a head and worker nodes")
    start.add_argument("--workers", type=int, default=2, help="worker nodes (default 2)")
    start.add_argument("--head-cpus", type=int, default=0, help="CPUs of the head (default 0)")
    for p in (start, start_node := sub.add_parser("start-node", help="(re)start a worker node")):
        p.add_argument("--cpus", type=int, default=1, help="CPUs per worker node (default 1)")
        p.add_argument("--gpus", type=int, default=0, help="GPUs per worker node (default 0)")
    start_node.add_argument("name", help="worker-K")
    sub.add_parser("stop", help="stop every node and every process of the cluster")
    stop = sub.add_parser("stop-node", help="stop one node (graceful, or --force: a crash)")
    stop.add_argument("name")
    stop.add_argument("--force", action="store_true", help="SIGKILL every process of the node")
    sub.add_parser("status", help="nodes, their pids and `ray status`")
    pids = sub.add_parser("pids", help="live processes of the cluster (or of one node)")
    pids.add_argument("name", nargs="?")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["ray"]:
        return run_ray_cli(argv[1:])
    args = build_parser().parse_args(argv)
    cluster = Cluster(args.dir)
    try:
        if args.command == "start":
            for flag in ("workers", "cpus", "gpus", "head_cpus"):
                if getattr(args, flag) < 0:
                    raise ClusterError(f"--{flag.replace('_', '-')} must be >= 0")
            start_cluster(cluster, args.workers, args.cpus, args.gpus, args.head_cpus)
        elif args.command == "stop":
            stop_cluster(cluster)
        elif args.command == "stop-node":
            if args.name not in cluster.nodes:
                raise ClusterError(f"no node {args.name!r} in {cluster.dir}")
            stop_node(cluster, args.name, force=args.force)
        elif args.command == "start-node":
            if not args.name.startswith("worker-"):
                raise ClusterError(f"start-node takes a worker name (worker-K), got {args.name!r}")
            start_worker(cluster, args.name, args.cpus, args.gpus)
        elif args.command == "pids":
            if args.name and args.name not in cluster.nodes:
                raise ClusterError(f"no node {args.name!r} in {cluster.dir}")
            print("\n".join(str(p) for p in sorted(cluster_pids(cluster, args.name))))
        elif args.command == "status":
            for name, node in cluster.nodes.items():
                state = "running" if _alive(node.get("pid")) else "stopped"
                print(f"{name}: pid {node.get('pid')} {state}  ({' '.join(node.get('args', []))})")
            if "gcs_port" in cluster.state:
                env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}
                env.update(cluster.client_env())
                ray_status = [sys.executable, "-m", "ray.scripts.scripts", "status"]
                subprocess.run(ray_status, env=env, check=False, timeout=60)
    except ClusterError as err:
        print(f"local.py: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
