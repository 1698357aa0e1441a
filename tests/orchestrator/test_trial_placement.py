"""orchestrator.run.trial_placement: a trial's own actor (and so its Train controller) is placed on
the head node. (On a multi-node cluster, where it matters: tests/cluster/test_cluster.py finds
every trial's control actors on the head in each scenario.)"""

from __future__ import annotations

import pytest
import ray
from ray import tune

from compat.ray_private import head_node_resource
from orchestrator.run.trial_placement import trial_resources

HEAD_NODE_RESOURCE = head_node_resource()


def test_the_heads_resource_is_rays_own_name_for_it() -> None:
    from ray._common.constants import HEAD_NODE_RESOURCE_NAME

    assert HEAD_NODE_RESOURCE == HEAD_NODE_RESOURCE_NAME


def test_a_trial_asks_for_the_heads_own_resource_and_no_cpu() -> None:
    (bundle,) = trial_resources().bundles
    assert bundle[HEAD_NODE_RESOURCE] > 0
    assert "CPU" not in bundle and "GPU" not in bundle


def where(config: dict) -> dict:
    return {"node": ray.get_runtime_context().get_node_id()}


@pytest.mark.slow
def test_tune_places_such_a_trial_on_the_head(tmp_path) -> None:
    from orchestrator.run.local_ray import connect

    connect(num_cpus=1)
    try:
        head = [n["NodeID"] for n in ray.nodes() if HEAD_NODE_RESOURCE in n["Resources"]]
        tuner = tune.Tuner(
            tune.with_resources(where, trial_resources()),
            run_config=tune.RunConfig(storage_path=str(tmp_path), verbose=0),
        )
        grid = tuner.fit()
        assert grid[0].error is None, grid[0].error
        assert [grid[0].metrics["node"]] == head
    finally:
        ray.shutdown()
