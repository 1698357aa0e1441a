"""What a trial has cost so far: reported with every report as `perf/…` metrics, carried across
restarts in its checkpoints.

    perf/wall_s     wall seconds from the trial's launch by its Tune driver to the report,
                    summed over its launches (a trial Tune restarted adds its new launch)
    perf/cpu_s      CPU seconds (user + system, children included) of its worker processes,
                    all ranks
    perf/gpu_s      GPU seconds: GPUs its workers hold × wall seconds (0 on CPU)
    perf/startup_s  fixed start-up: seconds from a launch to its DeepSpeed engine being ready
                    (placement, processes, imports, model, data, engine), summed over starts

Tokens trained are `train/tokens_seen`. Every value is cumulative, so a trial's last report
holds its total. A worker group that crashed did work after its last checkpoint that nothing
can report (its processes are gone); after such a restart the numbers are a lower bound, short
of that lost work.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import psutil
import torch

from records import metric_names as names
from trainables.metrics.distributed import sum_across_ranks


@dataclass(frozen=True)
class Cost:
    """Cumulative seconds of one trial (see the module docstring)."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    gpu_s: float = 0.0
    startup_s: float = 0.0

    def metrics(self) -> dict[str, float]:
        return {
            names.WALL_S: self.wall_s,
            names.CPU_S: self.cpu_s,
            names.GPU_S: self.gpu_s,
            names.STARTUP_S: self.startup_s,
        }


def process_cpu_s() -> float:
    """CPU seconds of this process and its finished children (user + system)."""
    t = psutil.Process().cpu_times()
    return t.user + t.system + t.children_user + t.children_system


class CostMeter:
    """The cost of one trial as seen by one rank (every rank holds one; `metrics` is a
    collective, as every report is)."""

    def __init__(self, launched_at: float | None, ready_at: float, device: torch.device) -> None:
        process_start = psutil.Process().create_time()
        self.launched_at = process_start if launched_at is None else launched_at
        self.gpus = 1.0 if device.type == "cuda" else 0.0
        """GPUs this rank holds (one per rank when it trains on one)."""
        self.before = Cost()
        """The wall and GPU seconds of the trial's earlier launches (its CPU and start-up
        seconds are carried below)."""
        self.carried_cpu_s = self.carried_startup_s = 0.0
        """CPU and start-up seconds of the worker groups before this one (from the checkpoint)."""
        self.own_startup_s = ready_at - self.launched_at
        """This worker group's start-up: from the launch (or, restarted within it, from this
        process's start) to its engine being ready."""
        self._restart_start = ready_at - process_start
        self.last = Cost()
        """The cost at the latest `metrics` call: what a checkpoint saved now carries."""

    def restore(self, state: dict[str, Any] | None) -> None:
        """Continue from a checkpoint's `state()` (None: a checkpoint from before costs)."""
        if not state:
            return
        at, before = Cost(**state["at"]), Cost(**state["before"])
        if state["launched_at"] == self.launched_at:
            # The same launch restarted its worker group: its wall clock runs on from the launch.
            self.before = before
            self.own_startup_s = self._restart_start
        else:
            self.before = replace(at, cpu_s=0.0, startup_s=0.0)
        self.carried_cpu_s, self.carried_startup_s = at.cpu_s, at.startup_s

    def metrics(self) -> dict[str, float]:
        """The trial's cumulative cost now (all ranks take part)."""
        cpu_s, gpus = sum_across_ranks([process_cpu_s(), self.gpus])
        wall = time.time() - self.launched_at
        self.last = Cost(
            wall_s=self.before.wall_s + wall,
            cpu_s=self.carried_cpu_s + cpu_s,
            gpu_s=self.before.gpu_s + gpus * wall,
            startup_s=self.carried_startup_s + self.own_startup_s,
        )
        return self.last.metrics()

    def state(self) -> dict[str, Any]:
        """What a checkpoint carries: the cost at the latest report and before this launch."""
        return {
            "launched_at": self.launched_at,
            "at": asdict(self.last),
            "before": asdict(self.before),
        }
