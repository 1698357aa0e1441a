"""orchestrator.run.placement_reaper: a placement group of this sweep that holds CPUs but runs no
live actor (a Train controller ended without removing it) is removed after the grace period;
groups in use, and Tune's memory-only groups, are left alone."""

from __future__ import annotations

import time

import pytest
import ray
from ray.util.placement_group import placement_group, placement_group_table
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from orchestrator.run.placement_reaper import QUIET_FAILED_LOOKS, PlacementGroupReaper


@pytest.fixture(scope="module")
def ray_local():
    from orchestrator.run.local_ray import connect

    connect(num_cpus=2)
    yield
    ray.shutdown()


@ray.remote(num_cpus=1)
class Worker:
    def ready(self) -> bool:
        return True


def state(group) -> str:
    return placement_group_table(group)["state"]


@pytest.mark.slow
def test_only_an_unused_worker_group_is_removed_and_only_after_the_grace(ray_local) -> None:
    orphan = placement_group([{"CPU": 1}])  # as a dead controller leaves its workers' group
    used = placement_group([{"CPU": 1}])
    tune_trial = placement_group([{"memory": 2**27}])  # a Tune trial's: no CPU
    ray.get([orphan.ready(), used.ready(), tune_trial.ready()])
    worker = Worker.options(scheduling_strategy=PlacementGroupSchedulingStrategy(used)).remote()
    ray.get(worker.ready.remote())

    reaper = PlacementGroupReaper(grace_s=2.0)
    first = time.monotonic()
    assert reaper.look(first) == []  # seen unused once: not yet
    assert state(orphan) == "CREATED"
    time.sleep(2.2)
    assert reaper.look(time.monotonic()) == [orphan.id.hex()]
    assert state(orphan) == "REMOVED"
    assert state(used) == "CREATED" and state(tune_trial) == "CREATED"
    # A group whose last actor ends becomes a suspect from then on, not from before.
    ray.kill(worker)
    time.sleep(1.0)
    now = time.monotonic()
    assert reaper.look(now) == []
    assert reaper.look(now + 2.0) == [used.id.hex()]
    assert state(tune_trial) == "CREATED"


class Unreachable(PlacementGroupReaper):
    """A reaper whose state API does not answer."""

    def look(self, now: float) -> list[str]:
        self.looks = getattr(self, "looks", 0) + 1
        raise ConnectionError("state API down")


def test_looks_are_spaced_and_a_lasting_failure_is_said_once(capsys) -> None:
    reaper = Unreachable(every_s=0.0)
    for step in range(QUIET_FAILED_LOOKS - 1):
        reaper.on_step_end(step, [])
    assert capsys.readouterr().err == ""  # a state API still starting: nothing said yet
    for step in range(3):
        reaper.on_step_end(step, [])
    err = capsys.readouterr().err
    assert err.count("numsweep: cannot list") == 1 and "state API down" in err, err
    assert reaper.looks == QUIET_FAILED_LOOKS + 2  # every step looked, the sweep went on
    spaced = Unreachable(every_s=3600.0)
    for step in range(5):
        spaced.on_step_end(step, [])
    assert spaced.looks == 1
