"""The results store's layout, writer and trial-state rule (records/layout.py, records/writer.py,
records.reader.trial_states) are the one definition of the store: `numsweep status`, the sink's
reader and the analysis apply its rules and agree on a store with restores and retries; the
trials table's parameter columns come from the loss registry; compaction keeps every row and
what the readers see; the trial-state rule, on its own and across parts with differing columns."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from analysis.selection import FINAL, select_values
from bench.synthetic_store import write_foreign_trials_part
from orchestrator.run.parquet_sink import ParquetSink
from orchestrator.status import experiment_status, trial_table
from orchestrator.sweep.search_space import trial_config
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import METRICS_SCHEMA, trial_row, trials_schema
from records.reader import (
    current_trials,
    load_trials,
    open_experiment,
    open_store,
    read_latest,
    trial_states,
)
from records.writer import ResultsStore
from tests.analysis_fixtures import at as golden_at
from trainables.losses import param_columns

T0 = dt.datetime(2025, 6, 1, tzinfo=dt.UTC)
METRIC = "eval/test/digit_acc"
SWEEP = SweepConfig.model_validate(
    {
        "experiment": "rr",
        "search": {
            "losses": ["mle", "dist2", "del"],
            "objectives": [{"metric": METRIC, "mode": "max"}],
        },
    }
)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def config(loss: str, **params) -> dict:
    return trial_config(SWEEP, {"loss": loss, **params}, "x")


def write_store(root: Path) -> ResultsStore:
    """Three trials, every value spelled out:
    - mle_a: started, failed (ERROR), restarted by Tune (attempt 1), finished. Attempt 0 wrote
      steps 0 and 2; attempt 1 re-reported step 2 and went on to step 4; a stale attempt-0 row
      for step 4 (0.90) carries the latest timestamp of all, and still loses to attempt 1 (0.50).
    - dist2_b (alpha 0.2, tau 3): its driver died and the sweep was resumed (a second start,
      attempt 1); step 2 was written twice by attempt 0 (0.40, then 0.42 later) and step 4 once
      by attempt 1 (0.61).
    - del_c: running, step 0 only (0.11).
    """
    store = ResultsStore(str(root), "rr")
    schema = trials_schema(param_columns())
    first_trials = [
        trial_row("mle_a", "RUNNING", config("mle"), start=at(1), ts=at(1)),
        trial_row("dist2_b", "RUNNING", config("dist2", alpha=0.2, tau=3.0), start=at(2), ts=at(2)),
        trial_row("del_c", "RUNNING", config("del"), start=at(3), ts=at(3)),
        trial_row("mle_a", "ERROR", config("mle"), start=at(1), end=at(5), error="OOM", ts=at(5)),
    ]
    later_trials = [
        trial_row("mle_a", "RUNNING", config("mle"), start=at(1), ts=at(6)),
        trial_row("dist2_b", "RUNNING", config("dist2", alpha=0.2, tau=3.0), start=at(2), ts=at(7)),
        trial_row(
            "dist2_b",
            "TERMINATED",
            config("dist2", alpha=0.2, tau=3.0),
            start=at(2),
            end=at(20),
            ts=at(20),
        ),
        trial_row("mle_a", "TERMINATED", config("mle"), start=at(1), end=at(21), ts=at(21)),
    ]
    store.write_part("trials", first_trials, schema)
    store.write_part("trials", later_trials, schema)

    def m(trial, attempt, step, value, ts):
        return {
            "trial_id": trial,
            "attempt": attempt,
            "step": step,
            "metric": METRIC,
            "value": value,
            "ts": at(ts),
        }

    store.write_part(
        "metrics",
        [
            m("mle_a", 0, 0, 0.10, 1),
            m("mle_a", 0, 2, 0.30, 2),
            m("dist2_b", 0, 0, 0.12, 2),
            m("dist2_b", 0, 2, 0.40, 3),
            m("del_c", 0, 0, 0.11, 4),
        ],
        METRICS_SCHEMA,
    )
    store.write_part(
        "metrics",
        [
            m("mle_a", 1, 2, 0.35, 8),
            m("mle_a", 1, 4, 0.50, 9),
            m("dist2_b", 0, 2, 0.42, 10),
            m("dist2_b", 1, 4, 0.61, 12),
        ],
        METRICS_SCHEMA,
    )
    store.write_part("metrics", [m("mle_a", 0, 4, 0.90, 30)], METRICS_SCHEMA)
    return store


@pytest.mark.parametrize("uri", [False, True])
def test_status_and_analysis_agree_on_restores_and_retries(tmp_path, uri):
    write_store(tmp_path)
    root = f"file://{tmp_path}" if uri else str(tmp_path)
    status = trial_table(open_experiment(root, "rr"), SWEEP)

    store = open_store(tmp_path)
    trials = load_trials(store)
    latest, _ = read_latest(store, [METRIC])
    final = select_values(latest, FINAL)
    analysed = (
        trials.join(final.select("trial_id", pl.col("value").alias(METRIC)), on="trial_id")
        .join(final.select("trial_id", pl.col("step").alias("last_step")), on="trial_id")
        .sort("trial_id")
    )
    columns = ["trial_id", "status", "starts", "loss", "alpha", "tau", "last_step", METRIC]
    assert status.select(columns).equals(analysed.select(columns))
    # ... and both are right (the values from the docstring of write_store)
    assert status.select(columns).rows() == [
        ("del_c", "RUNNING", 1, "del", 0.01, None, 0, 0.11),
        ("dist2_b", "TERMINATED", 2, "dist2", 0.2, 3.0, 4, 0.61),
        ("mle_a", "TERMINATED", 2, "mle", None, None, 4, 0.50),
    ]


def test_status_prints_every_parameter_column_and_the_right_best(tmp_path):
    write_store(tmp_path)
    text = experiment_status(str(tmp_path), SWEEP)
    header = next(line for line in text.splitlines() if "trial_id" in line)
    for column in ("starts", "alpha", "tau", "decay_base", "distance", METRIC):
        assert column in header, (column, header)
    assert "3 trial(s): 1 RUNNING, 2 TERMINATED" in text
    assert f"best max {METRIC}: 0.61 (trial dist2_b, loss dist2)" in text


def test_status_of_an_unreadable_store_names_the_file(tmp_path, capsys):
    # An unreadable part is not "no trial has started yet": the command names it (exit 2).
    from orchestrator.cli import main

    store = write_store(tmp_path)
    store.write_manifest({"config": SWEEP.model_dump(mode="json")})
    assert "3 trial(s)" in experiment_status(str(tmp_path), SWEEP)
    pl.DataFrame({"trial_id": ["x"], "step": [1]}).write_parquet(
        tmp_path / "metrics" / "experiment=rr" / "part-00099.parquet"
    )
    assert main(["status", "rr", "--results", str(tmp_path)]) == 2
    assert "part-00099.parquet lacks column" in capsys.readouterr().err


def test_the_sink_counts_attempts_by_the_same_rule(tmp_path):
    store = write_store(tmp_path)
    sink = ParquetSink(store, lambda t: trial_config(SWEEP, t.config, t.trial_id))
    sink.setup()
    assert sink._attempts == {"mle_a": 1, "dist2_b": 1, "del_c": 0}
    assert sink._started == {"mle_a": at(1), "dist2_b": at(2), "del_c": at(3)}


def test_trial_state_rule(golden: Path) -> None:
    # The rule itself (records.reader.trial_states), on rows written out of order.
    rows = pl.DataFrame(
        {
            "trial_id": ["t", "t", "t", "u"],
            "status": ["RUNNING", "ERROR", "RUNNING", "RUNNING"],
            "loss": ["mle", None, None, "del"],
            "error": [None, "boom", None, None],
            "start": [at(0), at(0), at(0), at(1)],
            "ts": [at(5), at(2), at(9), at(1)],  # out of order on purpose
        }
    )
    states = trial_states(rows).to_dicts()
    assert states[0] == {
        "trial_id": "t",
        "status": "RUNNING",  # the latest row (ts 9), not the last one written
        "error": None,  # the latest row's: the retry has no error (yet)
        "ts": at(9),
        "start": at(0),
        "loss": "mle",  # the latest row that sets it
        "starts": 2,
    }
    assert states[1]["trial_id"] == "u" and states[1]["starts"] == 1
    # ... and as the store's reader applies it across parts: a later part with a status-only row
    # (no config columns) and a new parameter column.
    write_foreign_trials_part(
        golden,
        "golden",
        [
            {
                "trial_id": "mle_s1",
                "status": "ERROR",
                "error": "OOM",
                "warmup": 10,
                "ts": golden_at(5000),
            }
        ],
    )
    trials = load_trials(open_store(golden))
    row = trials.filter(pl.col("trial_id") == "mle_s1").row(0, named=True)
    assert row["status"] == "ERROR" and row["error"] == "OOM"
    assert row["loss"] == "mle" and row["seed"] == 1  # from earlier rows
    assert row["warmup"] == 10
    other = trials.filter(pl.col("trial_id") == "del_s0").row(0, named=True)
    assert other["status"] == "TERMINATED" and other["alpha"] == 0.5 and other["warmup"] is None
    kept, notes = current_trials(open_store(golden))
    assert sorted(kept["trial_id"]) == ["del_s0", "mle_s0"]
    assert any("left out 1 ERROR trial" in n for n in notes)


def test_compaction_keeps_what_readers_count(tmp_path):
    store = write_store(tmp_path)

    def raw(table: str) -> pl.DataFrame:
        rows = pl.read_parquet(tmp_path / table / "experiment=rr" / "*.parquet")
        return rows.sort(rows.columns, nulls_last=True)

    raw_before = {table: raw(table) for table in ("metrics", "trials")}
    before = read_latest(open_store(tmp_path), [METRIC])[0].sort("trial_id", "step")
    trials_before = load_trials(open_store(tmp_path))
    assert store.compact("metrics") == (3, 10)
    assert store.compact("trials") == (2, 8)
    for table, rows in raw_before.items():
        assert len(store.list_parts(table)) == 1, table
        assert raw(table).equals(rows), table  # every row kept, repeats and retries included
    after = read_latest(open_store(tmp_path), [METRIC])[0].sort("trial_id", "step")
    assert after.equals(before)
    assert load_trials(open_store(tmp_path)).equals(trials_before)


def test_a_row_column_the_schema_lacks_is_an_error_not_a_silent_drop(tmp_path):
    store = ResultsStore(str(tmp_path), "rr")
    row = trial_row("t", "RUNNING", config("mle"), brand_new=1.0)
    with pytest.raises(ValueError, match=r"trials rows have column\(s\) \['brand_new'\]"):
        store.write_part("trials", [row], trials_schema(param_columns()))
    assert not (tmp_path / "trials").exists()
    with pytest.raises(ValueError, match="trial status 'PENDING'"):
        trial_row("t", "PENDING", config("mle"))
