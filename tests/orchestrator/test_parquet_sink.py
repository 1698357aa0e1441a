"""The Parquet sink and store: immutable parts, exactly-once rows across restarts, the manifest
(real Tune trial objects and real files; no Ray cluster). Compaction is tested with the store's
rules in tests/records/test_writer.py."""

from __future__ import annotations

import polars as pl
import pytest
from ray.tune.experiment import Trial

from orchestrator.run.parquet_sink import ParquetSink
from orchestrator.sweep.search_space import trial_config
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import METRICS_SCHEMA
from records.writer import ResultsStore

SWEEP = SweepConfig.model_validate({"experiment": "sink", "search": {"losses": ["mle", "del"]}})


def make_sink(root, **kwargs) -> ParquetSink:
    store = ResultsStore(str(root), "sink")
    sink = ParquetSink(store, lambda t: trial_config(SWEEP, t.config, t.trial_id), **kwargs)
    sink.setup()
    return sink


def result(step: int, **metrics) -> dict:
    # What Tune hands callbacks: our metrics plus Tune's own bookkeeping keys.
    return {"step": step, "training_iteration": step + 1, "trial_id": "x", "done": False, **metrics}


def read(root, table: str) -> pl.DataFrame:
    return pl.read_parquet(root / table / "experiment=sink" / "*.parquet")


def test_rows_buffered_then_written_as_immutable_parts(tmp_path):
    sink = make_sink(tmp_path, flush_rows=10**6, flush_seconds=10**6)
    trial = Trial("run_trial", config={"loss": "del", "alpha": 0.1}, trial_id="t1", stub=True)
    sink.on_trial_start(0, [trial], trial)
    sink.on_trial_result(
        0, [trial], trial, result(0, **{"eval/test/ce": 2.0, "model/params_total": 10})
    )
    sink.on_trial_result(1, [trial], trial, result(5, **{"train/loss": 1.5, "time_total_s": 3.0}))
    assert not (tmp_path / "metrics").exists()  # buffered
    sink.on_trial_complete(2, [trial], trial)
    metrics = read(tmp_path, "metrics").sort("step", "metric")
    assert metrics.select("trial_id", "attempt", "step", "metric", "value").rows() == [
        ("t1", 0, 0, "eval/test/ce", 2.0),
        ("t1", 0, 0, "model/params_total", 10.0),
        ("t1", 0, 5, "train/loss", 1.5),  # Tune's own keys (time_total_s, …) are not metrics
    ]
    trials = read(tmp_path, "trials").sort("ts")
    assert trials["status"].to_list() == ["RUNNING", "TERMINATED"]
    row = trials.row(1, named=True)
    assert (row["loss"], row["alpha"], row["decay_base"], row["seed"], row["model"]) == (
        "del",
        0.1,
        1.02,  # the default the trial ran with
        0,
        "tiny",
    )
    assert row["tau"] is None and row["lam"] is None  # not parameters of del
    assert row["start"] is not None and row["end"] is not None
    assert not list(tmp_path.rglob(".*.tmp"))


def test_flush_by_rows_and_at_checkpoints(tmp_path):
    sink = make_sink(tmp_path, flush_rows=3, flush_seconds=10**6)
    trial = Trial("run_trial", config={"loss": "mle"}, trial_id="t1", stub=True)
    sink.on_trial_start(0, [trial], trial)
    sink.on_trial_result(0, [trial], trial, result(0, **{"eval/test/ce": 1.0}))
    parts = lambda: sorted((tmp_path / "metrics" / "experiment=sink").glob("part-*"))  # noqa: E731
    assert len(parts()) == 0
    sink.on_trial_result(
        0, [trial], trial, result(1, **{"eval/test/ce": 1.0, "eval/test/digit_acc": 0.5})
    )
    assert len(parts()) == 1  # 3 rows reached
    sink.on_trial_result(
        0, [trial], trial, result(2, **{"train/loss": 1.0, "checkpoint_path": "/x"})
    )
    assert len(parts()) == 2  # a checkpointed step is on disk at once


def test_restarted_sink_writes_each_step_once_and_counts_attempts(tmp_path):
    trial = Trial("run_trial", config={"loss": "mle"}, trial_id="t1", stub=True)
    first = make_sink(tmp_path)
    first.on_trial_start(0, [trial], trial)
    for step in (0, 2, 4):
        first.on_trial_result(0, [trial], trial, result(step, **{"train/loss": float(step)}))
    first.flush()  # then the driver dies

    # Resumed from the checkpoint at step 2: steps 2 and 4 are reported again, then 6.
    second = make_sink(tmp_path)
    second.on_trial_start(0, [trial], trial)
    for step in (2, 4, 6):
        second.on_trial_result(0, [trial], trial, result(step, **{"train/loss": 100.0 + step}))
    second.on_experiment_end([trial])
    metrics = read(tmp_path, "metrics").sort("step")
    assert metrics.select("step", "attempt", "value").rows() == [
        (0, 0, 0.0),
        (2, 0, 2.0),
        (4, 0, 4.0),
        (6, 1, 106.0),
    ]
    assert second.skipped_rows == 2


def test_manifest_written_once(tmp_path):
    store = ResultsStore(str(tmp_path), "sink")
    assert store.read_manifest() is None
    store.write_manifest({"start": "first"})
    store.write_manifest({"start": "second"})
    assert store.read_manifest() == {"start": "first"}


@pytest.mark.parametrize("uri", ["file://{tmp}"])
def test_store_accepts_filesystem_uris(tmp_path, uri):
    store = ResultsStore(uri.format(tmp=tmp_path), "sink")
    store.write_part("metrics", [], METRICS_SCHEMA)
    assert len(list((tmp_path / "metrics" / "experiment=sink").glob("part-*.parquet"))) == 1
