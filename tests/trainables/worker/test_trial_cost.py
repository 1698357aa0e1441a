"""A trial's cost meter (trainables.worker.trial_cost) in one process (one rank, no process group):
fresh, restored within the same launch (Ray Train restarted its worker group), restored in a
new launch (Tune restarted the trial), and on a GPU device. Expected values are the module's
definitions applied by hand to the clock and this process's CPU time."""

from __future__ import annotations

import time

import psutil
import pytest
import torch

from trainables.worker.trial_cost import CostMeter, process_cpu_s

CPU = torch.device("cpu")


def saved(launched_at: float, at: tuple[float, float, float, float], before_wall: float = 0.0):
    """A checkpoint's cost state (CostMeter.state's form): the cost at the checkpoint as (wall,
    cpu, gpu, start-up) seconds, and the wall seconds of the launches before `launched_at`."""
    names = ("wall_s", "cpu_s", "gpu_s", "startup_s")
    before = dict.fromkeys(names, 0.0) | {"wall_s": before_wall}
    return {"launched_at": launched_at, "at": dict(zip(names, at, strict=True)), "before": before}


def test_a_fresh_trial_costs_its_wall_time_cpu_and_start_up() -> None:
    now = time.time()
    meter = CostMeter(launched_at=now - 10.0, ready_at=now - 2.0, device=CPU)
    cpu_before = process_cpu_s()
    m = meter.metrics()
    assert m["perf/wall_s"] == pytest.approx(10.0, abs=0.5)
    assert cpu_before <= m["perf/cpu_s"] <= process_cpu_s()
    assert m["perf/gpu_s"] == 0.0
    assert m["perf/startup_s"] == pytest.approx(8.0)
    state = meter.state()
    assert state["at"] == {
        "wall_s": m["perf/wall_s"],
        "cpu_s": m["perf/cpu_s"],
        "gpu_s": 0.0,
        "startup_s": m["perf/startup_s"],
    }
    assert state["launched_at"] == now - 10.0


def test_restored_in_the_same_launch_the_clock_runs_from_the_launch() -> None:
    now = time.time()
    launch = now - 60.0
    state = saved(launch, (140.0, 30.0, 0.0, 8.0), before_wall=100.0)
    meter = CostMeter(launched_at=launch, ready_at=now - 1.0, device=CPU)
    meter.restore(state)
    m = meter.metrics()
    # 100 s of earlier launches + 60 s of this one: the work lost after the checkpoint is in
    # this launch's clock, not lost.
    assert m["perf/wall_s"] == pytest.approx(160.0, abs=0.5)
    assert m["perf/cpu_s"] == pytest.approx(30.0 + process_cpu_s(), abs=0.5)
    # This group's start-up runs from its process's start (the launch's was the first group's).
    own = (now - 1.0) - psutil.Process().create_time()
    assert m["perf/startup_s"] == pytest.approx(8.0 + own)


def test_restored_in_a_new_launch_it_adds_to_the_checkpoint() -> None:
    now = time.time()
    state = saved(now - 5000.0, (50.0, 20.0, 0.0, 7.0))
    meter = CostMeter(launched_at=now - 10.0, ready_at=now - 2.0, device=CPU)
    meter.restore(state)
    m = meter.metrics()
    assert m["perf/wall_s"] == pytest.approx(60.0, abs=0.5)
    assert m["perf/cpu_s"] == pytest.approx(20.0 + process_cpu_s(), abs=0.5)
    assert m["perf/startup_s"] == pytest.approx(15.0)
    # A checkpoint saved now carries this launch, and the earlier launch as "before".
    carried = meter.state()
    assert carried["launched_at"] == now - 10.0 and carried["before"]["wall_s"] == 50.0


def test_a_checkpoint_from_before_costs_changes_nothing() -> None:
    now = time.time()
    meter = CostMeter(launched_at=now - 10.0, ready_at=now - 2.0, device=CPU)
    meter.restore(None)
    assert meter.metrics()["perf/wall_s"] == pytest.approx(10.0, abs=0.5)


def test_a_gpu_rank_costs_its_wall_time_in_gpu_seconds() -> None:
    now = time.time()
    state = saved(now - 900.0, (300.0, 10.0, 300.0, 20.0))
    meter = CostMeter(launched_at=now - 30.0, ready_at=now - 20.0, device=torch.device("cuda"))
    meter.restore(state)
    m = meter.metrics()
    assert m["perf/gpu_s"] == pytest.approx(300.0 + 30.0, abs=0.5)  # earlier + 1 GPU × 30 s
    assert m["perf/wall_s"] == pytest.approx(m["perf/gpu_s"])
