"""Resources no trial uses any more, given back: the driver removes this sweep's placement groups
that hold CPUs or GPUs while no live actor uses them.

Each start of a trial's Ray Train workers reserves their CPUs/GPUs as one placement group, made
by the trial's Train controller. Ray ties a placement group's life to its creator's *job*, not to
the creator: when a controller ends without removing its group (its process or its Tune trial
actor killed, its node lost) the group keeps its CPUs until the sweep ends. Ray Train has a
cleaner for this (a detached actor per controller that watches it), but it learns of a group only
once the workers have started, and on a CI run its watching threads were gone while a dead
controller's group held the one free CPU a restarted trial waited for (cluster/README.md, "A lost
worker node"). So the driver looks as well: every `every_s` it lists, through Ray's state API,
this job's placement groups that hold CPUs or GPUs and the job's actors that are not dead; a group
no such actor uses at two looks at least `grace_s` apart is removed, with a line saying so. A
controller that is restarting its workers removes its own group within seconds, and a new group's
workers exist (pending or alive) as soon as it is placed, so the grace leaves both alone. Tune's
own groups (a trial actor's token of memory) hold no CPU and are never touched.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import ray
from ray import tune
from ray.util.placement_group import PlacementGroup, remove_placement_group
from ray.util.state import list_actors, list_placement_groups

# Resources a placement group of Train workers holds; Tune's trial groups hold only memory.
WORKER_RESOURCES = ("CPU", "GPU")
STATE_API_TIMEOUT_S = 10
# Looks in a row that may fail before the sweep says so (the state API comes up a little after
# Ray, and a loaded head answers late now and then).
QUIET_FAILED_LOOKS = 4


def _state(list_fn: Callable[..., list], address: str, filters: list[tuple]) -> list:
    """Every row of one of Ray's state API listings (detailed) that matches `filters`."""
    return list_fn(
        address=address,
        filters=filters,
        detail=True,
        limit=10_000,
        timeout=STATE_API_TIMEOUT_S,
        raise_on_missing_output=False,
    )


def worker_groups(address: str, job_id: str) -> dict[str, list[dict]]:
    """This job's created placement groups that hold CPUs or GPUs: id -> bundles."""
    groups = _state(
        list_placement_groups,
        address,
        [("creator_job_id", "=", job_id), ("state", "=", "CREATED")],
    )
    return {
        g.placement_group_id: g.bundles
        for g in groups
        if any(b["unit_resources"].get(r) for b in g.bundles for r in WORKER_RESOURCES)
    }


def used_groups(address: str, job_id: str) -> set[str]:
    """The placement groups that this job's actors that are not dead (alive, pending, restarting)
    run in."""
    actors = _state(list_actors, address, [("job_id", "=", job_id), ("state", "!=", "DEAD")])
    return {a.placement_group_id for a in actors if a.placement_group_id}


class PlacementGroupReaper(tune.Callback):
    """A Tune callback (in the driver) that removes the sweep's unused worker placement groups."""

    def __init__(self, every_s: float = 15.0, grace_s: float = 30.0) -> None:
        self.every_s = every_s
        self.grace_s = grace_s
        self._suspects: dict[str, float] = {}  # group id -> when it was first seen unused
        self._next_look = 0.0
        self._failed_looks = 0

    def on_step_end(self, iteration: int, trials: list[Any], **info: Any) -> None:
        now = time.monotonic()
        if now < self._next_look:
            return
        self._next_look = now + self.every_s
        try:
            self.look(now)
        except Exception as error:  # the state API unreachable (starting, busy): look again
            self._failed_looks += 1
            if self._failed_looks == QUIET_FAILED_LOOKS:
                print(
                    f"numsweep: cannot list this sweep's placement groups ({error}); resources a "
                    "dead Ray Train controller leaves held are not given back while this lasts",
                    file=sys.stderr,
                )
        else:
            self._failed_looks = 0

    def look(self, now: float) -> list[str]:
        """One look: note the unused groups, remove those unused since `grace_s` ago; the ids
        removed."""
        context = ray.get_runtime_context()
        # The cluster's address, given: left out, Ray's state API guesses it from the Ray
        # processes of the machine, and fails when there are several instances.
        address, job_id = context.gcs_address, context.get_job_id()
        groups = worker_groups(address, job_id)
        unused = set(groups) - used_groups(address, job_id)
        self._suspects = {g: self._suspects.get(g, now) for g in unused}
        removed = [g for g, since in self._suspects.items() if now - since >= self.grace_s]
        for group in removed:
            remove_placement_group(PlacementGroup(ray.PlacementGroupID.from_hex(group)))
            del self._suspects[group]
            held = [b["unit_resources"] for b in groups[group]]
            print(
                f"numsweep: removed placement group {group[:12]} {held}: no live actor of this "
                f"sweep used it for {self.grace_s:.0f} s (a Ray Train controller ended without "
                "removing it)",
                file=sys.stderr,
                flush=True,
            )
        return removed
