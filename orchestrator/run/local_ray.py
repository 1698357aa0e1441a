"""Connecting to Ray: an existing cluster when there is one, else an embedded local instance
that listens on the loopback interface only."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import psutil
import ray

from compat.ray_private import local_system_config

# Ray waits a fixed 30 s for a new local node's raylet to register with its GCS, and fails the
# start past that ("The current node timed out during startup"). On a two-core machine busy with
# other trials or tests, that wait has run out (seen three times in clean-clone suite runs).
LOCAL_START_ATTEMPTS = 2
STARTUP_TIMEOUT_SAYS = "timed out during startup"


def cluster_address_env(address: str) -> dict[str, Any] | None:
    """The sweep's processes are told which cluster they belong to (RAY_ADDRESS in the job's
    runtime environment) when `address` names its GCS as host:port.

    Ray processes that use Ray's state API without an address guess it from the Ray processes
    running on their machine, and fail when there are several instances (a local cluster beside
    another Ray, as in the test suite; several clusters on one host). Among them is Ray Train's
    placement-group cleaner: its watching thread dies of that error at its first look, and a
    controller that ends uncleanly then leaves its workers' CPUs held until the sweep ends
    (cluster/README.md, "A lost worker node")."""
    if "://" in address or address == "auto":
        return None
    return {"env_vars": {"RAY_ADDRESS": address}}


def connect(address: str | None = None, *, num_cpus: int | None = None) -> str:
    """Initialise Ray and say how: "cluster" when `address` (or RAY_ADDRESS, as set inside
    `ray job submit`) names one, "local" for an embedded instance on 127.0.0.1."""
    if ray.is_initialized():
        return "existing"
    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        ray.init(address=address, runtime_env=cluster_address_env(address))
        return "cluster"
    # No node of a single machine is preempted, so Ray Train's preemption watcher (one more
    # process per trial start) has nothing to watch. Set before Ray starts: its processes
    # inherit it.
    os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
    # The dashboard process also serves Ray's state API, which Ray Train polls to clean up
    # after a trial; without it that poll fails (and logs so) every second. Loopback only.
    init_local(
        address="local",
        num_cpus=num_cpus or os.cpu_count(),
        include_dashboard=True,
        dashboard_host="127.0.0.1",
        # Ray starts its workers at niceness 15 so that a cluster's raylet stays responsive;
        # on this machine the trials are the job, and at 15 any other process (a plain
        # PyTorch loop next to them, say) takes their CPU first.
        **local_system_config(),
    )
    return "local"


def init_local(**init_kwargs: Any) -> None:
    """`ray.init(**init_kwargs)` of an embedded instance, started once more (up to
    `LOCAL_START_ATTEMPTS` in all) when Ray gives up waiting for its node to register; the
    processes the failed start left (GCS, raylet, dashboard, ...) are killed first."""
    for attempt in range(1, LOCAL_START_ATTEMPTS + 1):
        before = {p.pid for p in psutil.Process().children(recursive=True)}
        try:
            ray.init(**init_kwargs)
            return
        except Exception as error:
            if attempt == LOCAL_START_ATTEMPTS or STARTUP_TIMEOUT_SAYS not in str(error):
                raise
            left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
            for process in left:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            psutil.wait_procs(left, timeout=30)
            print(
                f"numsweep: Ray's local node did not start in time ({error}); "
                f"stopped its {len(left)} processes, starting it again",
                file=sys.stderr,
                flush=True,
            )


def cluster_capacity() -> dict[str, float]:
    """Total CPUs and GPUs of the connected cluster."""
    total = ray.cluster_resources()
    return {"CPU": float(total.get("CPU", 0.0)), "GPU": float(total.get("GPU", 0.0))}
