"""Where a trial's control actors run: on the cluster's head node, never on a worker node.

A trial is one Tune trial actor (`run_trial`), which starts a Ray Train run; Ray Train places
that run's controller (and the controller's synchronisation actor) on the node of the process
that calls `fit()`: the Tune trial actor's node. Those actors need no CPU, so Ray may put them
on any node, a worker node included. When that node is lost, the trial loses its controller
while its Train workers elsewhere live on, and their CPUs are freed only if something notices
(Ray Train's placement-group cleaner, `orchestrator.run.placement_reaper`; cluster/README.md, "A
lost worker node"). On the head, a trial's control actors share the cluster's fate: a worker
node's loss costs a trial only its workers, which Ray Train restarts from the checkpoint.

The head is named by the resource Ray gives it alone (`node:__internal_head__`,
`compat.ray_private.head_node_resource`, the way Ray's own docs and Ray Train's cleaner place an
actor there): a name, unlike a node id, that is the same for a sweep resumed by a new driver, so a
trial Tune stored with its resources is placed again after a restart of the head or of the driver.
Where the driver runs (`ray job submit` runs it on the head) does not matter: the driver's loss
ends the sweep anyway, and resubmitting resumes it.
"""

from __future__ import annotations

from ray import tune

from compat.ray_private import head_node_resource


def trial_resources() -> tune.PlacementGroupFactory:
    """A Tune trial's own resources: on the head node. The Tune trial actor only waits on its
    Train run: no CPU, a token of memory and of the head's resource (the workers' resources are
    requested by the Train run)."""
    return tune.PlacementGroupFactory([{"memory": 2**27, head_node_resource(): 0.001}])
