"""Reading results stores: deduplication of restored and retried rows, value selection, torn
files, and bad input (the trial-state rule across parts: tests/records/test_writer.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from analysis.selection import BEST, FINAL, ValueSpec, parse_value, parse_values, select_values
from bench.synthetic_store import EXACT_METRICS, generate_store
from records.errors import NothingStored, ResultsError
from records.layout import METRICS_SCHEMA, trials_schema
from records.reader import (
    current_trials,
    latest_rows,
    load_finished_trials,
    metric_names,
    open_store,
    read_latest,
    scan_metrics,
)
from trainables.losses import param_columns

TRIALS_SCHEMA_NOW = trials_schema(param_columns())
"""The trials schema the sweep's sink writes (parameter columns from the loss registry)."""


def test_synthetic_store_is_written_as_the_sink_writes(tmp_path: Path) -> None:
    store = generate_store(tmp_path, losses=("mle",), seeds=(0,), trials_per_part=1)
    parts = sorted((tmp_path / "metrics" / "experiment=synthetic").glob("part-*.parquet"))
    assert len(parts) == store.n_trials == 3
    assert pq.read_schema(parts[0]).remove_metadata().equals(METRICS_SCHEMA)
    trial_parts = sorted((tmp_path / "trials" / "experiment=synthetic").glob("part-*.parquet"))
    assert len(trial_parts) == 2  # RUNNING rows at the start, the final states at the end
    for part in trial_parts:
        assert pq.read_schema(part).remove_metadata().equals(TRIALS_SCHEMA_NOW)
    assert not list(tmp_path.rglob(".*.tmp"))
    rows = pl.read_parquet(trial_parts[1]).row(0, named=True)
    # trial_row from a real TrialConfig: the preset name, the dataset, the loss parameters.
    assert (rows["model"], rows["dataset"], rows["loss"]) == ("s", "mathgen", "mle")


def test_deduplication_keeps_highest_attempt_then_latest_write(golden: Path) -> None:
    store = open_store(golden)
    latest, counts = read_latest(store, ["eval/test/digit_acc", "eval/test/ce"])
    at200 = {
        (t, m): v
        for t, m, v in latest.filter(pl.col("step") == 200)
        .select("trial_id", "metric", "value")
        .iter_rows()
    }
    assert at200[("mle_s0", "eval/test/digit_acc")] == 0.60  # re-written later: 0.58 -> 0.60
    assert at200[("del_s0", "eval/test/digit_acc")] == 0.75  # attempt 1 beats a later attempt 0
    assert at200[("del_s0", "eval/test/ce")] == 0.90  # retry
    # 3 trials × 2 metrics × 3 steps kept, from 18 + 3 superseded rows read.
    assert (counts.raw, counts.kept) == (21, 18)
    assert "3 of 21 metric rows" in counts.note()


def test_synthetic_duplicates_and_retries_count_once(tmp_path: Path) -> None:
    store = generate_store(
        tmp_path, restored_fraction=0.2, retried_fraction=0.5, running_fraction=0.2, seed=4
    )
    assert store.n_metric_rows > store.n_unique_rows
    kept = latest_rows(scan_metrics(open_store(tmp_path))).collect()
    assert kept.height == store.n_unique_rows
    assert kept.select(pl.struct("trial_id", "step", "metric").is_unique().all()).item()


def test_restored_and_retried_rows_leave_sizes_and_tokens_alone(tmp_path: Path) -> None:
    # A re-written row of a model's size or of the tokens it was fed carries the same value:
    # the sizes a scaling fit reads are the configured ones, whatever the restores did.
    sizes = {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000}
    generate_store(tmp_path, sizes=sizes, restored_fraction=0.5, retried_fraction=0.5, seed=2)
    raw = pl.read_parquet(tmp_path / "metrics").filter(pl.col("metric").is_in(EXACT_METRICS))
    assert raw.height > raw.select("trial_id", "step", "metric").unique().height  # repeats exist
    spread = raw.group_by("trial_id", "step", "metric").agg(pl.col("value").n_unique())
    assert spread["value"].max() == 1
    latest, _ = read_latest(open_store(tmp_path), ["model/params_non_embedding"])
    assert set(latest["value"]) == {float(n) for n in sizes.values()}


def test_value_kinds(golden: Path) -> None:
    latest, _ = read_latest(open_store(golden), ["eval/test/ce", "eval/test/digit_entropy"])

    def pick(spec: ValueSpec) -> dict[tuple[str, str], float]:
        out = select_values(latest, spec)
        return {(t, m): v for t, m, v in out.select("trial_id", "metric", "value").iter_rows()}

    final, best, mid = pick(FINAL), pick(BEST), pick(ValueSpec("step", 100))
    assert final[("mle_s1", "eval/test/ce")] == 1.05
    assert best[("mle_s1", "eval/test/ce")] == 0.70  # lower is better, reached at step 100
    assert mid[("del_s0", "eval/test/digit_entropy")] == 0.7
    assert ("mle_s1", "eval/test/digit_entropy") not in best  # entropy has no best


def test_parse_value() -> None:
    assert parse_value("step:300") == ValueSpec("step", 300)
    assert parse_values(["final,best", "final"]) == [FINAL, BEST]
    with pytest.raises(ValueError, match="final, best, step:N"):
        parse_value("last")
    with pytest.raises(ValueError, match="final, best, step:N"):
        parse_value("step:-1")


def test_torn_part_file_is_skipped_with_a_note(golden: Path) -> None:
    torn = golden / "metrics" / "experiment=golden" / "part-00009.parquet"
    torn.write_bytes(b"PAR1 half a file")
    store = open_store(golden)
    assert str(torn) not in store.metric_files["golden"]
    assert any("skipped unreadable file" in n and "part-00009" in n for n in store.notes)
    assert "eval/test/ce" in metric_names(store)


def test_bad_input_is_named(tmp_path: Path, golden: Path) -> None:
    with pytest.raises(ResultsError, match="does not exist"):
        open_store(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match="no trials in"):
        open_store(tmp_path / "empty")
    with pytest.raises(ResultsError, match=r"unknown experiment 'other'.*available: golden"):
        open_store(golden, ["other"])
    with pytest.raises(ResultsError, match="unknown status DONE"):
        current_trials(open_store(golden), ["DONE"])
    # A readable part that breaks the contract is named, not skipped.
    pl.DataFrame(
        {"trial_id": ["x"], "attempt": [0], "step": [1], "metric": ["m"], "value": [1.0]}
    ).write_parquet(golden / "metrics" / "experiment=golden" / "part-00007.parquet")
    with pytest.raises(ResultsError, match=r"part-00007.parquet lacks column\(s\) ts"):
        open_store(golden)


def test_metrics_without_trial_rows_are_readable(tmp_path: Path) -> None:
    # A live sweep may flush metrics before the trial's first state row.
    generate_store(tmp_path, losses=("mle",), seeds=(0,), sizes={"s": 1_000_000})
    for part in (tmp_path / "trials").rglob("*.parquet"):
        part.unlink()
    store = open_store(tmp_path)
    trials, notes = current_trials(store)
    assert trials.height == 0 and "no trials in" in notes[0]


def test_finished_trials_are_the_terminated_ones_of_one_experiment(tmp_path: Path) -> None:
    # Two experiments in one store; the generator's own statuses are the truth.
    mine = generate_store(
        tmp_path, experiment="mine", running_fraction=0.3, errored_fraction=0.2, seed=7
    )
    generate_store(tmp_path, experiment="other", losses=("mle",), seeds=(0,))
    expected = {t for t, status in mine.statuses.items() if status == "TERMINATED"}
    assert 0 < len(expected) < mine.n_trials  # the store mixes finished and unfinished trials
    finished = load_finished_trials(tmp_path, "mine")
    assert set(finished["trial_id"]) == expected and finished.height == len(expected)
    assert set(finished["experiment"]) == {"mine"}


def test_finished_trials_are_none_until_something_is_stored(tmp_path: Path) -> None:
    generate_store(tmp_path / "store", experiment="other", losses=("mle",), seeds=(0,))
    (tmp_path / "empty").mkdir()
    for root, experiment in [
        (tmp_path / "nope", "e"),  # no folder yet
        (tmp_path / "empty", "e"),  # a folder, nothing written under it
        (tmp_path / "store", "e"),  # a store with other experiments only
    ]:
        with pytest.raises(NothingStored):
            open_store(root, [experiment])
        finished = load_finished_trials(root, experiment)
        assert finished.is_empty() and {"trial_id", "status"} <= set(finished.columns)


def test_finished_trials_of_an_unreadable_store_raise(tmp_path: Path) -> None:
    # Nothing written is none finished; a part that breaks the contract is not.
    generate_store(tmp_path, experiment="e", losses=("mle",), seeds=(0,))
    pl.DataFrame({"trial_id": ["x"], "step": [1]}).write_parquet(
        tmp_path / "metrics" / "experiment=e" / "part-00099.parquet"
    )
    with pytest.raises(ResultsError, match=r"part-00099.parquet lacks column") as raised:
        load_finished_trials(tmp_path, "e")
    assert not isinstance(raised.value, NothingStored)
