"""The results store's layout (schema version 1): where each table's parts and each experiment's
state live under a results root, the tables' schemas, row keys and trial states, and how a trials
row is made from a trial's configuration. The writer (`records.writer`) and the reader
(`records.reader`) both follow it; the sweep's sink, `numsweep status` and `analysis` go through
them.

Layout under a results root (a local path or any pyarrow filesystem URI, e.g. file://, s3://):

    metrics/experiment=<E>/part-<ns>-<uuid>.parquet   long table, METRICS_SCHEMA
    trials/experiment=<E>/part-<ns>-<uuid>.parquet    one row per trial state change,
                                                      trials_schema(<loss parameter columns>)
    experiments/<E>/manifest.json                     resolved sweep, versions, git revision
    experiments/<E>/optuna.db                         the Optuna study (SQLite, search mode)
    experiments/<E>/ray/                              Ray Tune / Ray Train state, checkpoints

Rows: a metric value is identified by METRIC_KEY; of several rows with one key (a resumed trial
re-reports the steps after its checkpoint; a retried trial is a new attempt) the greatest
METRIC_VERSION wins. A trial's current state follows `records.reader.trial_states`. Parts are
immutable: written under a temporary name and renamed, never appended to.

pyarrow only (its schemas); nothing here imports polars or torch. The trials table's parameter
columns are handed in by the writer's caller, which derives them from the loss registry
(`trials_schema(param_columns)`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

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
follow from `seed` and `control`, so they are never arm keys (`records.reader.config_columns`)."""
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
