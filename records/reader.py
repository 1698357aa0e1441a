"""The results store's reader (schema version 1), for `analysis` and `numsweep status` alike: lazy
polars scans of the long metrics table, deduplication, and the current state of every trial. The
store's layout, schemas and row keys are `records.layout`, its writer `records.writer`; this
module reads them and holds the trial-state rule (`trial_states`), under a local path or a URI
(s3://bucket/prefix, gs://…, file://…).

Part files are listed with pyarrow's filesystem for the root (`pyarrow.fs.FileSystem.from_uri`)
and scanned by polars, which reads the same URIs itself; both take credentials from the usual
environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, an S3-compatible
server's address from AWS_ENDPOINT_URL).

Every command goes through `open_store` (which lists the part files and checks their footers, so a
part still being written by a running sweep is skipped with a note instead of failing the read),
then `scan_metrics` (projection + predicate pushdown into the Parquet scan) and `latest_rows`
(one row per trial, step and metric).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from records import layout
from records.errors import NothingStored, ResultsError
from records.layout import (
    METRIC_KEY,
    METRIC_VERSION,
    SEED_SOURCE_COLUMNS,
    STARTS,
    STATE_COLUMNS,
    STATUSES,
    TRIAL_KEY,
    TRIAL_VERSION,
)

METRICS_SCHEMA: dict[str, pl.DataType] = {
    # Integers are read as int64 so that parts written with a wider type still scan together.
    name: pl.Int64() if dtype.is_integer() else dtype
    for name, dtype in pl.from_arrow(
        # no rows, the Arrow types (pa.nulls: pyarrow's Python-object paths would import pandas)
        pa.Table.from_arrays(
            [pa.nulls(0, f.type) for f in layout.METRICS_SCHEMA], schema=layout.METRICS_SCHEMA
        )
    ).schema.items()
}
"""The metrics table as analysis reads it (`experiment` comes from the partition folder)."""

_CAST = pl.ScanCastOptions(
    integer_cast="upcast",
    float_cast="upcast",
    datetime_cast=["nanosecond-downcast", "millisecond-upcast", "convert-timezone"],
)

LOADED_STATE_COLUMNS: frozenset[str] = STATE_COLUMNS | {STARTS}
"""Columns of a `load_trials` frame that describe a trial's state, not its configuration."""

KEY = ("experiment", *METRIC_KEY)
"""One analysed value per key."""


@dataclass(frozen=True)
class Store:
    """The readable part files of the selected experiments under one results root."""

    root: str
    """The results root as given: a local path or a URI."""
    experiments: tuple[str, ...]
    metric_files: dict[str, tuple[str, ...]]
    """Per experiment, its readable metrics parts: local paths, or URIs under a URI root."""
    trial_files: dict[str, tuple[str, ...]]
    notes: list[str] = field(default_factory=list)
    """What was skipped while listing (unreadable part files), for the user."""
    storage_options: dict[str, str] | None = None
    """What polars needs beyond the environment to read a URI root (None for a local one)."""


@dataclass(frozen=True)
class _Root:
    """A results root opened with pyarrow: its filesystem, the root's path on it, and how a path
    on it is named for polars (a local path, or the URI)."""

    fs: pafs.FileSystem
    base: str
    scheme: str | None

    def name(self, path: str) -> str:
        return path if self.scheme is None else f"{self.scheme}://{path}"


def _open_root(root: str) -> _Root:
    if "://" not in root:
        return _Root(pafs.LocalFileSystem(), str(Path(root).expanduser().absolute()), None)
    try:
        fs, base = pafs.FileSystem.from_uri(root)
    except Exception as err:  # pyarrow raises several types for a bad or unreachable URI
        raise ResultsError(f"results URI {root}: cannot open it: {err}") from err
    scheme = root.split("://", 1)[0]
    return _Root(fs, base.rstrip("/"), None if scheme == "file" else scheme)


def _storage_options(root: str) -> dict[str, str] | None:
    """polars reads credentials and AWS_ENDPOINT_URL from the environment; a plain-http endpoint
    (a local S3-compatible server) it also has to be allowed to use."""
    if not root.startswith("s3://"):
        return None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL", "")
    return {"aws_allow_http": "true"} if endpoint.startswith("http://") else None


def _experiment_dirs(where: _Root, folder: str) -> dict[str, str]:
    if where.fs.get_file_info(folder).type != pafs.FileType.Directory:
        return {}
    return {
        info.base_name.removeprefix(layout.PARTITION): info.path
        for info in sorted(where.fs.get_file_info(pafs.FileSelector(folder)), key=lambda i: i.path)
        if info.type == pafs.FileType.Directory and info.base_name.startswith(layout.PARTITION)
    }


def _readable_parts(
    where: _Root, folder: str, notes: list[str], required: Collection[str] = ()
) -> tuple[str, ...]:
    """The part files whose Parquet footer reads; a part a live sweep is still writing fails that
    check and is left out (and mentioned) rather than breaking the whole scan. A readable part
    without the `required` columns is an error naming the file."""
    infos = where.fs.get_file_info(pafs.FileSelector(folder))
    parts = []
    for path in sorted(
        i.path
        for i in infos
        if i.base_name.startswith(layout.PART_PREFIX) and i.base_name.endswith(layout.PART_SUFFIX)
    ):
        try:
            schema = pq.read_schema(path, filesystem=where.fs)
        except Exception as err:  # pyarrow raises several error types for a torn file
            notes.append(
                f"skipped unreadable file {where.name(path)} ({type(err).__name__}: {err})"
            )
            continue
        missing = [c for c in required if c not in schema.names]
        if missing:
            raise ResultsError(
                f"metrics file {where.name(path)} lacks column(s) {', '.join(missing)}"
            )
        parts.append(where.name(path))
    return tuple(parts)


def open_store(root: str | Path, experiments: Sequence[str] | None = None) -> Store:
    """List the results under `root` (a path or a URI), for `experiments` (default: every
    experiment present)."""
    root = str(root)
    where = _open_root(root)
    kind = where.fs.get_file_info(where.base).type
    if kind == pafs.FileType.NotFound:
        raise NothingStored(f"results directory {root} does not exist")
    if kind != pafs.FileType.Directory:
        raise ResultsError(f"results path {root} is not a directory")
    metric_dirs, trial_dirs = (
        _experiment_dirs(where, f"{where.base}/{table}") for table in layout.TABLES
    )
    found = sorted(set(metric_dirs) | set(trial_dirs))
    if not found:
        raise NothingStored(
            f"no trials in {root}: expected trials/experiment=<E>/part-*.parquet and "
            "metrics/experiment=<E>/part-*.parquet under it"
        )
    if experiments:
        unknown = [e for e in experiments if e not in found]
        if unknown:
            raise NothingStored(
                f"unknown experiment {', '.join(map(repr, unknown))} in {root}; "
                f"available: {', '.join(found)}"
            )
        chosen = tuple(dict.fromkeys(experiments))
    else:
        chosen = tuple(found)
    notes: list[str] = []
    metric_files = {
        e: _readable_parts(where, metric_dirs[e], notes, METRICS_SCHEMA) if e in metric_dirs else ()
        for e in chosen
    }
    trial_files = {
        e: _readable_parts(where, trial_dirs[e], notes) if e in trial_dirs else () for e in chosen
    }
    return Store(root, chosen, metric_files, trial_files, notes, _storage_options(root))


def scan_metrics(store: Store, metrics: Collection[str] | None = None) -> pl.LazyFrame:
    """Raw metric rows (duplicates and all attempts included) of the selected experiments, with an
    `experiment` column; `metrics` restricts the metric names (pushed into the Parquet scan)."""
    frames = []
    for experiment, files in store.metric_files.items():
        if not files:
            continue
        lf = pl.scan_parquet(
            list(files),
            schema=METRICS_SCHEMA,
            extra_columns="ignore",
            cast_options=_CAST,
            storage_options=store.storage_options,
        )
        if metrics is not None:
            lf = lf.filter(pl.col("metric").is_in(list(metrics)))
        frames.append(lf.with_columns(pl.lit(experiment, pl.String()).alias("experiment")))
    if not frames:
        return pl.LazyFrame(schema={**METRICS_SCHEMA, "experiment": pl.String()})
    return pl.concat(frames, how="vertical")


def latest_rows(raw: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (experiment, trial_id, step, metric): the row greatest in METRIC_VERSION (the
    highest attempt, within it the latest write; a restored sweep may re-write a row, a retried
    trial re-reports steps).

    Columns: experiment, trial_id, step, metric, value, in no fixed order (polars' group-by
    keeps none): what sums them (a mean over seeds) puts them in order first.
    """
    return raw.group_by(list(KEY)).agg(pl.col("value").sort_by(list(METRIC_VERSION)).last())


def metric_names(store: Store) -> list[str]:
    """The distinct metric names in the selected experiments, sorted."""
    names = scan_metrics(store).select(pl.col("metric").unique()).collect()
    return sorted(names["metric"].to_list())


@dataclass(frozen=True)
class RowCounts:
    """How many metric rows a read saw and kept, for the user's notes."""

    raw: int
    kept: int

    def note(self) -> str | None:
        """A sentence about rows counted once, or None when nothing was deduplicated."""
        if self.raw == self.kept:
            return None
        return (
            f"{self.raw - self.kept} of {self.raw} metric rows were repeats (restored sweep) or "
            "superseded by a later attempt of the same trial: each (trial, step, metric) "
            "counted once"
        )


def read_latest(store: Store, metrics: Collection[str]) -> tuple[pl.DataFrame, RowCounts]:
    """`latest_rows` of the given metrics, collected, with the raw and kept row counts."""
    raw = scan_metrics(store, metrics)
    latest, counts = pl.collect_all(
        [latest_rows(raw), raw.select(pl.len().alias("n"))],
    )
    return latest, RowCounts(raw=int(counts["n"][0]), kept=latest.height)


def _read_trial_parts(store: Store) -> pl.DataFrame | None:
    frames = []
    for experiment, files in store.trial_files.items():
        for path in files:
            df = pl.read_parquet(path, storage_options=store.storage_options)
            missing = [c for c in ("trial_id", "status", "ts") if c not in df.columns]
            if missing:
                raise ResultsError(f"trials file {path} lacks column(s) {', '.join(missing)}")
            frames.append(df.with_columns(pl.lit(experiment, pl.String()).alias("experiment")))
    if not frames:
        return None
    # Parts may lack all-null columns or carry new parameter columns: align by name.
    return pl.concat(frames, how="diagonal_relaxed")


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


def load_trials(store: Store) -> pl.DataFrame:
    """The current state of every trial: one row per (experiment, trial_id), by the store's
    trial-state rule (`trial_states`: state from the latest row, configuration
    from the latest row that sets it, `starts` counting the trial's starts).
    Empty frame (with experiment, trial_id, status columns) when no trial has been written yet.
    """
    df = _read_trial_parts(store)
    if df is None or df.height == 0:
        return _no_trials()
    df = df.with_columns(pl.col("ts").cast(pl.Datetime("us", "UTC")))
    return trial_states(df)


def open_experiment(root: str | Path, experiment: str) -> Store | None:
    """The parts of `experiment` under `root` (a path or a URI), None while the store or the
    experiment has nothing written yet; a store that is there but unreadable raises ResultsError,
    naming the file."""
    try:
        return open_store(root, [experiment])  # lists this experiment's parts only
    except NothingStored:
        return None


def load_finished_trials(root: str | Path, experiment: str) -> pl.DataFrame:
    """The finished (TERMINATED) trials of `experiment` in the store at `root`, as `load_trials`
    rows; an empty frame (experiment, trial_id, status) while it has nothing written yet."""
    store = open_experiment(root, experiment)
    if store is None:
        return _no_trials()
    return load_trials(store).filter(pl.col("status") == "TERMINATED")


def _no_trials() -> pl.DataFrame:
    return pl.DataFrame(
        schema={"experiment": pl.String(), "trial_id": pl.String(), "status": pl.String()}
    )


def config_columns(trials: pl.DataFrame) -> list[str]:
    """The configuration columns of a `load_trials` frame (experiment included, state excluded;
    the per-source seeds excluded too: they follow from `seed` and `control`, and an arm
    averages over seeds)."""
    skip = LOADED_STATE_COLUMNS | set(SEED_SOURCE_COLUMNS)
    return [c for c in trials.columns if c not in skip]


DEFAULT_STATUSES: tuple[str, ...] = ("TERMINATED",)
"""Trials whose values at the end of training are tabled unless --status says otherwise: the
finished ones. On a live sweep, RUNNING trials are counted in a note (their values so far are not
final values); ERROR trials stopped part-way."""

CURVE_STATUSES: tuple[str, ...] = ("TERMINATED", "RUNNING")
"""Trials drawn in curves over training by default: running ones contribute the steps so far."""


def current_trials(
    store: Store, statuses: Sequence[str] = DEFAULT_STATUSES
) -> tuple[pl.DataFrame, list[str]]:
    """`load_trials` restricted to `statuses`, and notes on what was left out or is partial."""
    bad = [s for s in statuses if s not in STATUSES]
    if bad:
        raise ResultsError(f"unknown status {', '.join(bad)}; statuses: {', '.join(STATUSES)}")
    trials = load_trials(store)
    notes: list[str] = []
    if trials.height == 0:
        return trials, [
            f"no trials in {store.root} yet (experiments: {', '.join(store.experiments)})"
        ]
    counts = dict(trials.group_by("status").len().iter_rows())
    for status, n in sorted(counts.items()):
        if status in statuses:
            continue
        hint = {
            "RUNNING": " (not finished; add RUNNING to --status to see their latest values)",
            "ERROR": " (failed part-way; add ERROR to --status to include them)",
        }.get(status, "")
        notes.append(f"left out {n} {status} trial(s){hint}")
    if "RUNNING" in statuses and counts.get("RUNNING"):
        notes.append(
            f"{counts['RUNNING']} trial(s) still RUNNING: their final values are the latest "
            "step reported so far"
        )
    kept = trials.filter(pl.col("status").is_in(list(statuses)))
    if kept.height == 0:
        notes.append(f"no {' or '.join(statuses)} trials yet: nothing to table")
    return kept, notes


def trial_summary(trials: pl.DataFrame) -> str:
    """ "12 trials (9 TERMINATED, 3 RUNNING)"."""
    counts = dict(trials.group_by("status").len().iter_rows()) if trials.height else {}
    parts = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts.get(s))
    return f"{trials.height} trials" + (f" ({parts})" if parts else "")
