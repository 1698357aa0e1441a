"""The results store (schema version 1), the one definition every part of numsweep shares: the
sweep's Parquet sink writes through it, `numsweep status` and `analysis` read through it.

Layout under a results root (a local path or any pyarrow filesystem URI, e.g. file://, s3://):

    metrics/experiment=<E>/part-<ns>-<uuid>.parquet   long table, METRICS_SCHEMA
    trials/experiment=<E>/part-<ns>-<uuid>.parquet    one row per trial state change,
                                                      trials_schema(<loss parameter columns>)
    experiments/<E>/manifest.json                     resolved sweep, versions, git revision
    experiments/<E>/optuna.db                         the Optuna study (SQLite, search mode)
    experiments/<E>/ray/                              Ray Tune / Ray Train state, checkpoints

Rows: a metric value is identified by METRIC_KEY; of several rows with one key (a resumed trial
re-reports the steps after its checkpoint; a retried trial is a new attempt) the greatest
METRIC_VERSION wins. A trial's current state follows `trial_states`. Parts are immutable:
written under a temporary name and renamed, never appended to.

Files are read and written with pyarrow (its filesystems give the URIs), the trial-state rule is
a polars expression (pyarrow's Python-object conversions would import pandas); nothing here
imports torch. The trials table's parameter columns are handed in by the writer, which derives
them from the loss registry (`trials_schema(param_columns)`).
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

SCHEMA_VERSION = 1

TABLES = ("metrics", "trials")
PARTITION = "experiment="
"""A table's folder per experiment: `<table>/experiment=<E>`."""
PART_PREFIX, PART_SUFFIX = "part-", ".parquet"

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
"""The long metrics table, one row per (trial, attempt, step, metric)."""

METRIC_KEY = ("trial_id", "step", "metric")
"""What one metric value is (within an experiment)."""
METRIC_VERSION = ("attempt", "ts")
"""Of rows with one METRIC_KEY, the one greatest in this order counts: the highest attempt,
within it the latest write."""

STATUSES = ("RUNNING", "TERMINATED", "ERROR")
"""Trial states the sink writes: a start (RUNNING), the end (TERMINATED, or ERROR with `error`)."""

TRIAL_KEY = ("trial_id",)
TRIAL_VERSION = ("ts",)
"""A trial's rows in time order; its latest row by `ts` holds its current state."""

_TIME = pa.timestamp("us", tz="UTC")
_PARAM_TYPES = {float: pa.float64(), int: pa.int64(), bool: pa.bool_()}
_HEAD = [("trial_id", pa.string()), ("status", pa.string()), ("loss", pa.string())]
_TAIL = [
    ("lr", pa.float64()),
    ("seed", pa.int64()),
    ("seed_init", pa.int64()),
    ("seed_data", pa.int64()),
    ("seed_order", pa.int64()),
    ("control", pa.string()),
    ("model", pa.string()),
    ("dataset", pa.string()),
    ("group", pa.string()),
    ("start", _TIME),
    ("end", _TIME),
    ("error", pa.string()),
    ("ts", _TIME),
]
TRIAL_COLUMNS = pa.schema(_HEAD + _TAIL)
"""The trials table's columns other than the loss parameters."""

STATE_COLUMNS: frozenset[str] = frozenset({"trial_id", "status", "start", "end", "error", "ts"})
"""Trials-table columns that describe a trial's state; every other column is configuration."""
SEED_SOURCE_COLUMNS: tuple[str, ...] = ("seed_init", "seed_data", "seed_order")
"""The seeds a trial ran with per source (model init, generated data, data order): `seed` unless
its config's `seeds` overrode one. Stores written before they existed lack these columns. They
follow from `seed` and `control`, so they are never arm keys (`analysis.store.config_columns`)."""
STARTS = "starts"
"""Column `trial_states` adds: how many times the trial started (RUNNING rows); a state column."""


def trials_schema(param_columns: Mapping[str, type]) -> pa.Schema:
    """The trials table with one column per loss parameter (`{"alpha": float, "distance": bool}`,
    null where a trial's loss does not take it) after `loss`."""
    clash = sorted(set(param_columns) & set(TRIAL_COLUMNS.names))
    if clash:
        raise ValueError(f"loss parameter(s) {clash} would shadow trials-table columns")
    params = [(name, _PARAM_TYPES[kind]) for name, kind in param_columns.items()]
    return pa.schema(_HEAD + params + _TAIL)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def trial_row(trial_id: str, status: str, config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A trials-table row from a resolved TrialConfig (plain JSON): its loss, every parameter of
    that loss under its own name, learning rate, seed (and the per-source seeds, the control
    arm's name), model, dataset; `extra` sets state."""
    if status not in STATUSES:
        raise ValueError(f"trial status {status!r}; statuses: {', '.join(STATUSES)}")
    loss = config["loss"]
    model = config["model"]
    data = config["data"]
    seeds = config.get("seeds") or {}  # absent in the configs of trials run before it existed
    return {
        "trial_id": trial_id,
        "status": status,
        "loss": loss["name"],
        **loss.get("params", {}),
        "lr": config["train"]["lr"],
        "seed": config["seed"],
        **{
            column: config["seed"] if seeds.get(source) is None else seeds[source]
            for column, source in zip(SEED_SOURCE_COLUMNS, ("init", "data", "order"), strict=True)
        },
        "control": config.get("control"),
        "model": model["preset"] or model["path"],
        "dataset": data["source"] if data["source"] != "instructions" else data["path"],
        "group": None,
        "start": None,
        "end": None,
        "error": None,
        "ts": now(),
        **extra,
    }


def trial_states(rows: pl.DataFrame) -> pl.DataFrame:
    """The trial-state rule: one row per trial (per experiment, when `rows` has that column).

    Of a trial's rows in TRIAL_VERSION order, `status`, `end`, `error` and `ts` come from the
    latest; `start` is its first start; `starts` counts its RUNNING rows (1 + the restarts of
    its driver); every configuration column is its latest non-null value. Sorted by the key.
    """
    keys = [c for c in ("experiment", *TRIAL_KEY) if c in rows.columns]
    state = [c for c in rows.columns if c in STATE_COLUMNS and c not in keys and c != "start"]
    config = [c for c in rows.columns if c not in STATE_COLUMNS and c not in keys]
    first_start = [pl.col("start").min()] if "start" in rows.columns else []
    return (
        rows.sort([*keys, *TRIAL_VERSION], maintain_order=True)
        .group_by(keys, maintain_order=True)
        .agg(
            [pl.col(c).last() for c in state]
            + first_start
            + [pl.col(c).drop_nulls().last() for c in config]
            + [(pl.col("status") == "RUNNING").sum().cast(pl.Int64).alias(STARTS)]
        )
        .sort(keys)
    )


@dataclass(frozen=True)
class ExperimentPaths:
    """Where an experiment keeps its state under a results root (a path or a URI)."""

    root: str
    experiment: str

    @property
    def directory(self) -> str:
        return f"{self.root.rstrip('/')}/experiments/{self.experiment}"

    @property
    def manifest(self) -> str:
        return f"{self.directory}/manifest.json"

    @property
    def ray_storage(self) -> str:
        """Ray Tune and Ray Train storage (trial state, checkpoints)."""
        return f"{self.directory}/ray"

    def table(self, table: str) -> str:
        """The folder of `table`'s parts for this experiment."""
        if table not in TABLES:
            raise ValueError(f"unknown results table {table!r}; tables: {', '.join(TABLES)}")
        return f"{self.root.rstrip('/')}/{table}/{PARTITION}{self.experiment}"

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file://")

    def default_study_storage(self) -> str:
        """`sqlite:///…/experiments/<E>/optuna.db`; ValueError for a remote root."""
        if not self.is_local:
            raise ValueError(
                f"search.storage: the results root {self.root} is remote; give an RDB URL or a "
                "journal file for the Optuna study"
            )
        local = self.directory.removeprefix("file://")
        return f"sqlite:///{local}/optuna.db"


class ResultsStore:
    """Writes and reads one experiment's immutable Parquet parts and its manifest under a results
    root (a local path or a pyarrow filesystem URI)."""

    def __init__(self, root: str, experiment: str) -> None:
        if "://" in root:
            self.fs, base = pafs.FileSystem.from_uri(root)
        else:
            self.fs, base = pafs.LocalFileSystem(), root
        self.base = base.rstrip("/")
        self.experiment = experiment
        self.paths = ExperimentPaths(self.base, experiment)

    def write_part(
        self, table: str, rows: Sequence[Mapping[str, Any]] | pa.Table, schema: pa.Schema
    ) -> str:
        """One new immutable part file with `rows`; returns its path. A row key that `schema`
        lacks is an error (it would be dropped silently)."""
        if isinstance(rows, pa.Table):
            data = rows
        else:
            extra = sorted({k for row in rows for k in row} - set(schema.names))
            if extra:
                raise ValueError(f"{table} rows have column(s) {extra} that its schema lacks")
            data = pa.Table.from_pylist(list(rows), schema=schema)
        directory = self.paths.table(table)
        self.fs.create_dir(directory, recursive=True)
        name = f"{PART_PREFIX}{time.time_ns():020d}-{uuid.uuid4().hex[:12]}{PART_SUFFIX}"
        final, temporary = f"{directory}/{name}", f"{directory}/.{name}.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            pq.write_table(data, stream)
        self.fs.move(temporary, final)  # readers never see a half-written part
        return final

    def list_parts(self, table: str) -> list[str]:
        directory = self.paths.table(table)
        if self.fs.get_file_info(directory).type != pafs.FileType.Directory:
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(directory))
        return sorted(
            i.path
            for i in infos
            if i.base_name.startswith(PART_PREFIX) and i.base_name.endswith(PART_SUFFIX)
        )

    def read_table(self, table: str, columns: Sequence[str] | None = None) -> pa.Table | None:
        """Every part of `table` (None if there is none), `columns` only when given. Trials parts
        may carry different parameter columns: they are aligned by name (null where absent)."""
        parts = self.list_parts(table)
        if not parts:
            return None
        if table == "metrics":
            read = [pq.read_table(p, filesystem=self.fs, schema=METRICS_SCHEMA) for p in parts]
        else:
            read = [pq.read_table(p, filesystem=self.fs) for p in parts]
        merged = pa.concat_tables(read, promote_options="permissive")
        return merged if columns is None else merged.select(list(columns))

    def compact(self, table: str) -> tuple[int, int]:
        """Merge the current parts of `table` into one (same rows, sorted by key and version);
        returns (parts merged, rows). The merged part is written (atomically) before the old ones
        are deleted, so a crash in between leaves duplicates, which readers drop, never a loss."""
        parts = self.list_parts(table)
        if len(parts) < 2:
            rows = 0 if not parts else pq.read_metadata(parts[0], filesystem=self.fs).num_rows
            return len(parts), rows
        merged = self.read_table(table)
        assert merged is not None
        keys = (
            (*METRIC_KEY, *METRIC_VERSION) if table == "metrics" else (*TRIAL_KEY, *TRIAL_VERSION)
        )
        merged = merged.sort_by([(k, "ascending") for k in keys])
        self.write_part(table, merged, merged.schema)
        for path in parts:
            self.fs.delete_file(path)
        return len(parts), merged.num_rows

    def read_manifest(self) -> dict[str, Any] | None:
        path = self.paths.manifest
        if self.fs.get_file_info(path).type != pafs.FileType.File:
            return None
        with self.fs.open_input_stream(path) as stream:
            return json.loads(stream.read().decode())

    def write_manifest(self, manifest: dict[str, Any]) -> str:
        """Write the experiment's manifest once (a resumed or extended sweep keeps the first)."""
        final = self.paths.manifest
        if self.fs.get_file_info(final).type == pafs.FileType.File:
            return final
        directory = final.rsplit("/", 1)[0]
        self.fs.create_dir(directory, recursive=True)
        temporary = f"{directory}/.manifest.json.tmp"
        with self.fs.open_output_stream(temporary) as stream:
            stream.write(json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())
        self.fs.move(temporary, final)
        return final
