"""Streams every trial's reported metrics to Parquet while the sweep runs (a Ray Tune callback).

Layout under the results root (schema version 1, documented in the README):

    metrics/experiment=<E>/part-<uuid>.parquet   long table: trial_id, attempt, step, metric,
                                                 value, ts
    trials/experiment=<E>/part-<uuid>.parquet    one row per trial state change: trial_id,
                                                 status, loss, its parameters, seed, model, …
    experiments/<E>/manifest.json                resolved config, versions, git revision, start

Parts are immutable: written under a temporary name and renamed, never appended to. Rows are
buffered and flushed by count, by age, at each trial's end and at the end of the sweep, so
thousands of trials do not make millions of tiny files. The root may be a local path or any
pyarrow filesystem URI.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from ray.tune import Callback

SCHEMA_VERSION = 1
METRIC_PREFIXES = ("eval/", "gen/", "train/", "perf/", "model/")
PARAM_COLUMNS = ("alpha", "decay_base", "lam", "eta", "tau")

METRICS_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("attempt", pa.int32()),
        ("step", pa.int64()),
        ("metric", pa.string()),
        ("value", pa.float64()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)
TRIALS_SCHEMA = pa.schema(
    [
        ("trial_id", pa.string()),
        ("status", pa.string()),
        ("loss", pa.string()),
        *[(name, pa.float64()) for name in PARAM_COLUMNS],
        ("distance", pa.bool_()),
        ("lr", pa.float64()),
        ("seed", pa.int64()),
        ("model", pa.string()),
        ("dataset", pa.string()),
        ("group", pa.string()),
        ("start", pa.timestamp("us", tz="UTC")),
        ("end", pa.timestamp("us", tz="UTC")),
        ("error", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class ResultsStore:
    """Writes immutable Parquet parts and the manifest under a results root (path or URI)."""

    def __init__(self, root: str, experiment: str) -> None:
        self.fs, base = (
            pafs.FileSystem.from_uri(root)
            if "://" in root
            else (
                pafs.LocalFileSystem(),
                root,
            )
        )
        self.base = base.rstrip("/")
        self.experiment = experiment

    def _dir(self, table: str) -> str:
        return f"{self.base}/{table}/experiment={self.experiment}"

    def write_part(self, table: str, rows: list[dict[str, Any]], schema: pa.Schema) -> str:
        """One new immutable part file with `rows`; returns its path."""
        directory = self._dir(table)
        self.fs.create_dir(directory, recursive=True)
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        final, temporary = f"{directory}/{name}", f"{directory}/.{name}.tmp"
        table_ = pa.Table.from_pylist(rows, schema=schema)
        with self.fs.open_output_stream(temporary) as stream:
            pq.write_table(table_, stream)
        self.fs.move(temporary, final)  # readers never see a half-written part
        return final

    def write_manifest(self, manifest: dict[str, Any]) -> str:
        directory = f"{self.base}/experiments/{self.experiment}"
        self.fs.create_dir(directory, recursive=True)
        final, temporary = f"{directory}/manifest.json", f"{directory}/.manifest.json.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            stream.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
        self.fs.move(temporary, final)
        return final


def trial_row(trial_id: str, status: str, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A trials-table row from a resolved TrialConfig (plain JSON)."""
    loss = config["loss"]
    params = loss.get("params", {})
    model = config["model"]
    data = config["data"]
    return {
        "trial_id": trial_id,
        "status": status,
        "loss": loss["name"],
        **{name: params.get(name) for name in PARAM_COLUMNS},
        "distance": params.get("distance"),
        "lr": config["train"]["lr"],
        "seed": config["seed"],
        "model": model["preset"] or model["path"],
        "dataset": data["source"] if data["source"] != "instructions" else data["path"],
        "group": None,
        "start": None,
        "end": None,
        "error": None,
        "ts": _now(),
        **extra,
    }


class ParquetSink(Callback):
    """Ray Tune callback: each reported result becomes long-table rows, each trial state change a
    trials-table row. `resolve(trial)` returns the trial's plain-JSON TrialConfig."""

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
        self.parts_written = 0

    # ---- buffering -------------------------------------------------------------------------
    def flush(self) -> None:
        if self._metrics:
            self.store.write_part("metrics", self._metrics, METRICS_SCHEMA)
            self.parts_written += 1
            self._metrics = []
        if self._trials:
            self.store.write_part("trials", self._trials, TRIALS_SCHEMA)
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
        self._started.setdefault(tid, _now())
        self._trial_state(trial, "RUNNING")
        self._maybe_flush()

    def on_trial_result(
        self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
    ) -> None:
        if "step" not in result:
            return
        ts, step = _now(), int(result["step"])
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
        self._maybe_flush()

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._trial_state(trial, "TERMINATED", end=_now())
        self.flush()

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        error = getattr(trial, "error_file", None)
        message = None
        if error:
            try:
                with open(error) as fh:
                    message = fh.read()[-2000:]
            except OSError:
                message = str(error)
        self._trial_state(trial, "ERROR", end=_now(), error=message)
        self.flush()

    def on_experiment_end(self, trials: list, **info: Any) -> None:
        self.flush()
