"""The results store's Arrow schemas (version 1): the contract between the sweep's Parquet sink,
which writes them, and the analysis, which reads them. Documented in the README."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

PARAM_COLUMNS: tuple[str, ...] = ("alpha", "decay_base", "lam", "eta", "tau")
"""Numeric loss hyper-parameters, one trials-table column each (null where a loss lacks it)."""

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
"""One row per trial state change; the latest `ts` per trial is its current state."""
