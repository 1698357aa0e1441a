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

from analysis.schema import METRICS_SCHEMA, PARAM_COLUMNS, TRIALS_SCHEMA

METRIC_PREFIXES = ("eval/", "gen/", "train/", "perf/", "model/")


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

    def write_part(
        self, table: str, rows: list[dict[str, Any]] | pa.Table, schema: pa.Schema
    ) -> str:
        """One new immutable part file with `rows`; returns its path."""
        directory = self._dir(table)
        self.fs.create_dir(directory, recursive=True)
        name = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:12]}.parquet"
        final, temporary = f"{directory}/{name}", f"{directory}/.{name}.tmp"
        table_ = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, schema=schema)
        with self.fs.open_output_stream(temporary) as stream:
            pq.write_table(table_, stream)
        self.fs.move(temporary, final)  # readers never see a half-written part
        return final

    def read_table(self, table: str, columns: list[str]) -> pa.Table | None:
        """`columns` of every existing part of `table` for this experiment (None if none)."""
        import pyarrow.dataset as ds

        directory = self._dir(table)
        if self.fs.get_file_info(directory).type != pafs.FileType.Directory:
            return None
        # Temporary files start with '.', which the dataset reader ignores.
        dataset = ds.dataset(directory, filesystem=self.fs, format="parquet")
        return dataset.to_table(columns=columns)

    def list_parts(self, table: str) -> list[str]:
        directory = self._dir(table)
        if self.fs.get_file_info(directory).type != pafs.FileType.Directory:
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(directory))
        return sorted(
            i.path
            for i in infos
            if i.base_name.startswith("part-") and i.base_name.endswith(".parquet")
        )

    def compact(self, table: str) -> tuple[int, int]:
        """Merge the current parts of `table` into one (same rows, sorted); returns (parts
        merged, rows). The merged part is written (atomically) before the old ones are deleted,
        so a crash in between leaves duplicates, which readers drop, never a loss."""
        parts = self.list_parts(table)
        if len(parts) < 2:
            rows = 0 if not parts else pq.read_metadata(parts[0], filesystem=self.fs).num_rows
            return len(parts), rows
        schema = METRICS_SCHEMA if table == "metrics" else TRIALS_SCHEMA
        merged = pa.concat_tables(
            [pq.read_table(p, filesystem=self.fs, schema=schema) for p in parts]
        )
        keys = (
            ["trial_id", "attempt", "step", "metric"] if table == "metrics" else ["trial_id", "ts"]
        )
        merged = merged.sort_by([(k, "ascending") for k in keys])
        self.write_part(table, merged, schema)
        for path in parts:
            self.fs.delete_file(path)
        return len(parts), merged.num_rows

    def _manifest_path(self) -> str:
        return f"{self.base}/experiments/{self.experiment}/manifest.json"

    def read_manifest(self) -> dict[str, Any] | None:
        path = self._manifest_path()
        if self.fs.get_file_info(path).type != pafs.FileType.File:
            return None
        with self.fs.open_input_stream(path) as stream:
            return json.loads(stream.read().decode())

    def write_manifest(self, manifest: dict[str, Any]) -> str:
        """Write the experiment's manifest once (a resumed or extended sweep keeps the first)."""
        final = self._manifest_path()
        if self.fs.get_file_info(final).type == pafs.FileType.File:
            return final
        directory = final.rsplit("/", 1)[0]
        self.fs.create_dir(directory, recursive=True)
        temporary = f"{directory}/.manifest.json.tmp"
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
        states = self.store.read_table("trials", ["trial_id", "status", "start"])
        if states is not None:
            for row in states.to_pylist():
                if row["status"] == "RUNNING":
                    self._attempts[row["trial_id"]] = self._attempts.get(row["trial_id"], -1) + 1
                if row["start"] is not None:
                    self._started.setdefault(row["trial_id"], row["start"])

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
