"""orchestrator.run.train_bounds: every restart of a trial's Ray Train run has a limit, and a trial
whose workers cannot be placed fails after its starts, naming what it waited for, instead of
waiting without end (Ray 2.60 retries a worker group's start forever by default)."""

from __future__ import annotations

import os
import threading
import time

import pytest
import ray
from ray import tune

from orchestrator.run.driver import run_trial
from orchestrator.run.train_bounds import START_TIMEOUT_ENV, failure_config, set_train_env
from orchestrator.run.trial_placement import trial_resources
from orchestrator.sweep.search_space import grid_arms
from orchestrator.sweep.sweep_file import ResourcesConfig, SweepConfig


def test_every_kind_of_restart_is_bounded_by_max_failures() -> None:
    config = failure_config(ResourcesConfig(max_failures=3))
    assert config.max_failures == 3
    # Ray's defaults for these two are -1: without end.
    assert config.controller_failure_limit == 3
    assert config.max_preemption_failures == 3


def test_the_start_timeout_is_the_sweeps_and_the_poll_settings_the_users(monkeypatch) -> None:
    monkeypatch.setenv(START_TIMEOUT_ENV, "5")  # a value from before: the sweep file wins
    monkeypatch.setenv("RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S", "300")  # the user's: kept
    monkeypatch.delenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", raising=False)
    set_train_env(ResourcesConfig(placement_timeout_s=42.5))
    assert os.environ[START_TIMEOUT_ENV] == "42.5"
    assert os.environ["RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"] == "300"
    assert os.environ["RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"] == "0.5"


@ray.remote(num_cpus=2)
class Blocker:
    """Holds both of the test instance's CPUs."""

    def ready(self) -> bool:
        return True


@pytest.mark.slow
def test_a_trial_that_cannot_be_placed_fails_naming_what_it_waited_for(tmp_path) -> None:
    from orchestrator.run.local_ray import connect

    connect(num_cpus=2)
    try:
        blocker = Blocker.remote()
        ray.get(blocker.ready.remote())
        sweep = SweepConfig.model_validate(
            {
                "experiment": "unplaceable",
                "mode": "grid",
                "trial": {"model": {"preset": "tiny"}},
                "grid": {"losses": ["mle"], "seeds": [0]},
                "resources": {"placement_timeout_s": 3, "max_failures": 1},
            }
        )
        trainable = tune.with_resources(
            tune.with_parameters(run_trial, sweep=sweep, storage_path=str(tmp_path / "t")),
            trial_resources(),
        )
        tuner = tune.Tuner(
            trainable,
            param_space={"arm": grid_arms(sweep)[0]},
            run_config=tune.RunConfig(storage_path=str(tmp_path / "tune"), verbose=0),
        )
        outcome: dict = {}
        started = time.monotonic()
        # In a thread, so that a wait without end (Ray's default) fails the test, not hangs it.
        fit = threading.Thread(target=lambda: outcome.update(grid=tuner.fit()), daemon=True)
        fit.start()
        fit.join(timeout=240)
        assert not fit.is_alive(), "the trial still waits for its workers after 240 s"
        elapsed = time.monotonic() - started
        error = str(outcome["grid"][0].error)
        assert "PlacementTimeoutError" in error, error
        assert "1 Ray Train worker(s) of {'CPU': 1.0} each" in error, error
        assert "could not be placed in 2 start(s) of 3 s" in error, error
        assert "free in the cluster now: none" in error, error
        assert elapsed >= 6, elapsed  # both starts waited their 3 s
    finally:
        ray.shutdown()
