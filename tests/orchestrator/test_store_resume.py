"""A sweep resumed where its Ray state is not (a fresh clone of a committed store): the store's
finished trials, written by the real Parquet sink from Tune trial objects, decide what is left.
The whole command on a real sweep is in test_resume.py."""

from __future__ import annotations

import polars as pl
import pytest
from ray.tune.experiment import Trial

from orchestrator.run.parquet_sink import ParquetSink
from orchestrator.store_resume import store_resume
from orchestrator.sweep.search_space import grid_arms, trial_config, trial_params
from orchestrator.sweep.sweep_file import SweepConfig
from records.writer import ResultsStore

GRID = SweepConfig.model_validate(
    {
        "experiment": "e",
        "mode": "grid",
        "grid": {"losses": ["mle", "del"], "seeds": [0, 1], "lrs": [1e-3, 3e-3]},
    }
)
SEARCH = SweepConfig.model_validate(
    {"experiment": "e", "search": {"losses": ["mle", "del"], "num_trials": 4}}
)


def write_trials(root, sweep: SweepConfig, configs: list[dict], finished: int) -> None:
    """Start every trial in `configs` (Tune's config dicts) through the sink; finish the first
    `finished` of them."""
    store = ResultsStore(str(root), sweep.experiment)
    store.write_manifest({"config": sweep.model_dump(mode="json")})
    sink = ParquetSink(store, lambda t: trial_config(sweep, trial_params(t.config), t.trial_id))
    sink.setup()
    trials = [
        Trial("run_trial", config=config, trial_id=f"t{i}", stub=True)
        for i, config in enumerate(configs)
    ]
    for trial in trials:
        sink.on_trial_start(0, trials, trial)
    for trial in trials[:finished]:
        sink.on_trial_complete(1, trials, trial)
    sink.flush()


def test_a_grid_runs_only_the_arms_the_store_has_not_finished(tmp_path):
    arms = grid_arms(GRID)
    assert len(arms) == 8
    # The first five finished; the sixth started and was lost with the Ray state; two never ran.
    write_trials(tmp_path, GRID, [{"arm": arm} for arm in arms[:6]], finished=5)
    left = store_resume(GRID, str(tmp_path))
    assert left is not None and (left.finished, left.total) == (5, 8)
    [run] = left.runs
    assert run.name == "e" and run.num_trials == 3 and list(run.arms) == arms[5:]
    assert "5 of 8 trials finished" in left.describe("e")
    assert "running the 3 left afresh" in left.describe("e")


def test_a_finished_grid_runs_nothing(tmp_path):
    write_trials(tmp_path, GRID, [{"arm": arm} for arm in grid_arms(GRID)], finished=8)
    left = store_resume(GRID, str(tmp_path))
    assert left is not None and left.runs == [] and (left.finished, left.total) == (8, 8)
    assert left.describe("e").endswith("nothing to run")


def test_an_arm_is_done_only_with_the_same_configuration(tmp_path):
    # Finished trials of the same losses and seeds at another learning rate do not count.
    other = [{"arm": {**arm, "lr": 1e-2}} for arm in grid_arms(GRID)]
    write_trials(tmp_path, GRID, other, finished=8)
    [run] = store_resume(GRID, str(tmp_path)).runs
    assert list(run.arms) == grid_arms(GRID)


def test_a_manifest_without_trials_runs_every_arm(tmp_path):
    ResultsStore(str(tmp_path), "e").write_manifest({"config": GRID.model_dump(mode="json")})
    [run] = store_resume(GRID, str(tmp_path)).runs
    assert list(run.arms) == grid_arms(GRID)


def search_configs(n: int) -> list[dict]:
    return [{"loss": "mle", "seed": 0, "lr": 1e-3 * (i + 1)} for i in range(n)]


def test_a_finished_search_runs_nothing(tmp_path):
    write_trials(tmp_path, SEARCH, search_configs(4), finished=4)
    left = store_resume(SEARCH, str(tmp_path))
    assert left.runs == [] and (left.finished, left.total) == (4, 4)


def test_a_search_with_nothing_finished_starts_again(tmp_path):
    write_trials(tmp_path, SEARCH, search_configs(2), finished=0)
    [run] = store_resume(SEARCH, str(tmp_path)).runs
    assert run.num_trials == 4 and run.arms is None


def test_a_search_with_only_its_manifest_starts_again(tmp_path):
    ResultsStore(str(tmp_path), "e").write_manifest({"config": SEARCH.model_dump(mode="json")})
    left = store_resume(SEARCH, str(tmp_path))
    assert [run.num_trials for run in left.runs] == [4] and left.finished == 0


def test_a_part_finished_search_is_refused_with_what_to_do(tmp_path):
    write_trials(tmp_path, SEARCH, search_configs(3), finished=2)
    with pytest.raises(ValueError, match=r"2 of 4 trials .* cannot continue.*numsweep extend"):
        store_resume(SEARCH, str(tmp_path))


def test_an_unreadable_store_is_refused_not_taken_for_nothing_done(tmp_path):
    # Taken for nothing done, every finished arm would run again and append duplicates.
    write_trials(tmp_path, GRID, [{"arm": arm} for arm in grid_arms(GRID)], finished=8)
    part = tmp_path / "trials" / "experiment=e" / "part-00099.parquet"
    pl.DataFrame({"trial_id": ["x"]}).write_parquet(part)
    with pytest.raises(ValueError, match=r"part-00099.parquet lacks column"):
        store_resume(GRID, str(tmp_path))
