"""Streams every trial's reported metrics to Parquet while the sweep runs (a Ray Tune callback).

The store itself (layout, schemas, row keys, trial states, the writer) is `records.layout`;
this callback turns Tune's events into its rows. Rows are buffered and flushed by count, by age,
at each checkpointed step, at each trial's end and at the end of the sweep, so thousands of
trials do not make millions of tiny files.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import polars as pl
from ray.tune import Callback

from records.layout import METRICS_SCHEMA, now, trial_row, trials_schema
from records.metric_names import FAMILIES
from records.reader import trial_states
from records.writer import ResultsStore
from trainables.losses import param_columns

METRIC_PREFIXES = tuple(sorted({f.pattern.split("/", 1)[0] + "/" for f in FAMILIES}))
"""Result keys stored as metrics (the registry's groups); Tune's own keys are not."""


class ParquetSink(Callback):
    """Ray Tune callback: each reported result becomes long-table rows, each trial state change a
    trials-table row. `resolve(trial)` returns the trial's plain-JSON TrialConfig.

    Exactly once: a (trial, step) already on disk, from this run or an earlier one of the same
    experiment, is never written again, so a resumed sweep or a worker group restarted from a
    checkpoint (both re-report the steps after that checkpoint) adds nothing twice. Every result
    that carries a checkpoint is flushed at once, so whatever a crash loses from the buffer comes
    after the last checkpoint and is reported again on resume: no step is lost. `attempt` counts
    a trial's starts (restarts of its driver, in this run or earlier ones).
    """

    def __init__(
        self,
        store: ResultsStore,
        resolve,
        *,
        flush_rows: int = 5000,
        flush_seconds: float = 10.0,
    ) -> None:
        self.store = store
        self.resolve = resolve
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._metrics: list[dict[str, Any]] = []
        self._trials: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self._attempts: dict[str, int] = {}
        self._started: dict[str, dt.datetime] = {}
        self._written: dict[str, set[int]] = {}
        # The loss registry's parameters, one column each (read now: a loss registered later,
        # as in the tests, is included).
        self.trials_schema = trials_schema(param_columns())
        self.parts_written = 0
        self.skipped_rows = 0

    def setup(self, **info: Any) -> None:
        """Read what earlier runs of this experiment wrote: steps per trial, starts per trial."""
        self._metrics, self._trials = [], []
        self._written, self._attempts, self._started = {}, {}, {}
        steps = self.store.read_table("metrics", ["trial_id", "step"])
        if steps is not None:
            for row in steps.group_by(["trial_id", "step"]).aggregate([]).to_pylist():
                self._written.setdefault(row["trial_id"], set()).add(row["step"])
        states = self.store.read_table("trials", ["trial_id", "status", "start", "ts"])
        if states is not None:
            for row in trial_states(pl.from_arrow(states)).iter_rows(named=True):
                self._attempts[row["trial_id"]] = row["starts"] - 1
                if row["start"] is not None:
                    self._started[row["trial_id"]] = row["start"]

    # ---- buffering -------------------------------------------------------------------------
    def flush(self) -> None:
        if self._metrics:
            self.store.write_part("metrics", self._metrics, METRICS_SCHEMA)
            self.parts_written += 1
            self._metrics = []
        if self._trials:
            self.store.write_part("trials", self._trials, self.trials_schema)
            self.parts_written += 1
            self._trials = []
        self._last_flush = time.monotonic()

    def _maybe_flush(self) -> None:
        too_many = len(self._metrics) >= self.flush_rows
        too_old = time.monotonic() - self._last_flush >= self.flush_seconds
        if too_many or too_old:
            self.flush()

    def _trial_state(self, trial: Any, status: str, **extra: Any) -> None:
        config = self.resolve(trial)
        self._trials.append(
            trial_row(
                trial.trial_id, status, config, start=self._started.get(trial.trial_id), **extra
            )
        )

    # ---- Tune hooks ------------------------------------------------------------------------
    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        tid = trial.trial_id
        self._attempts[tid] = self._attempts.get(tid, -1) + 1
        self._started.setdefault(tid, now())
        self._trial_state(trial, "RUNNING")
        self._maybe_flush()

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        if "step" not in result:
            return
        ts, step = now(), int(result["step"])
        written = self._written.setdefault(trial.trial_id, set())
        if step in written:
            self.skipped_rows += 1
            return
        written.add(step)
        attempt = self._attempts.get(trial.trial_id, 0)
        for key, value in result.items():
            if key.startswith(METRIC_PREFIXES) and isinstance(value, int | float):
                self._metrics.append(
                    {
                        "trial_id": trial.trial_id,
                        "attempt": attempt,
                        "step": step,
                        "metric": key,
                        "value": float(value),
                        "ts": ts,
                    }
                )
        if result.get("checkpoint_path"):
            self.flush()  # everything up to a checkpoint is on disk before training goes on
        else:
            self._maybe_flush()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._trial_state(trial, "TERMINATED", end=now())
        self.flush()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        path, text = error_text(trial)
        message = None if path is None else (text[-2000:] if text is not None else path)
        self._trial_state(trial, "ERROR", end=now(), error=message)
        self.flush()

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.flush()


def error_text(trial: Any) -> tuple[str | None, str | None]:
    """The file Tune wrote a failed `trial`'s error to and its text (the text None where the
    file cannot be read; both None without a file)."""
    path = getattr(trial, "error_file", None)
    if not path:
        return None, None
    try:
        with open(path) as fh:
            return path, fh.read()
    except OSError:
        return path, None
