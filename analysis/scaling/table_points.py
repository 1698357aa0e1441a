"""Points from a table made outside numsweep — a paper's figure digitised, a lab's runs logged
elsewhere, a ladder of public checkpoints — as the frame the scaling fits read from a store
(points.TrialValues): one row per (row of the table, metric column), N and D from their columns,
a seed and a group where the table has them.

Every row must have a positive, finite N, D (when given), FLOPs (when given) and metric value:
a bad table is an error naming the column and the rows (1-based, as a spreadsheet numbers the
data rows), before anything is fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.scaling.points import TrialValues
from analysis.scaling.powerlaw import MIN_SIZES, distinct_count
from analysis.settings_flags import flag
from records.errors import ResultsError

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
JOINT_MIN_D = 3
"""Distinct D a joint fit needs (huber.fit_joint)."""


@dataclass(frozen=True)
class TableOptions:
    """What a points table's columns hold besides N and D (TableColumns adds those two)."""

    metrics: tuple[str, ...] | None = field(default=None, metadata=flag(command_line=False))
    """Metric columns to fit (--metric); None: `loss`."""
    seed: str | None = field(default=None, metadata=flag("--seed-column", metavar="COL"))
    """Seed column (--seed-column): rows equal but for it are one configuration's seeds."""
    group: str | None = field(default=None, metadata=flag(metavar="COL"))
    """Column splitting the table into separate fits (--group), e.g. the paper or the loss."""
    flops: str | None = field(default=None, metadata=flag(metavar="COL"))
    """Training compute per row (--flops); None: C = 6·N·D."""
    weights: str | None = field(default=None, metadata=flag(metavar="COL"))
    """Row weights of the Huber fits (--weights): a cell's value is its rows' weighted mean, its
    weight their sum; None: every row 1."""


@dataclass(frozen=True)
class TableColumns(TableOptions):
    """Which column of a points table holds what (`analysis scaling --points FILE`)."""

    n: str = field(default="N", metadata=flag("--n-col", "--n", metavar="COL"))
    """Parameters (--n-col, as `predict` spells it; --n too)."""
    d: str | None = field(default=None, metadata=flag("--d-col", "--d", metavar="COL"))
    """Tokens trained (--d-col, as `predict` spells it; --d too); None: the column `D` where the
    table has one, else no D axis."""

    def declared(self) -> list[str | None]:
        """Every column this names (a metric's, a seed's, ...), None where unset."""
        return [self.n, self.d, *(self.metrics or ("loss",)), self.seed, self.group]


def read_table(path: str | Path) -> pl.DataFrame:
    """The table at `path` (CSV or Parquet by its suffix)."""
    p = Path(path)
    if p.suffix.lower() not in TABLE_SUFFIXES:
        raise ResultsError(f"--points {p}: a .csv or .parquet file is needed")
    if not p.is_file():
        raise ResultsError(f"--points {p}: no such file")
    try:
        if p.suffix.lower() == ".csv":
            return pl.read_csv(p, infer_schema_length=None)
        return pl.read_parquet(p)
    except (pl.exceptions.PolarsError, OSError) as err:
        raise ResultsError(f"--points {p}: cannot be read ({err})") from err


def _rows(mask: pl.Series) -> str:
    """'rows 3, 17 (2 of 240)': the 1-based rows where `mask` holds, the first five named."""
    idx = [i + 1 for i, bad in enumerate(mask.to_list()) if bad]
    shown = ", ".join(map(str, idx[:5])) + (", …" if len(idx) > 5 else "")
    return f"row{'s' if len(idx) > 1 else ''} {shown} ({len(idx)} of {mask.len()})"


def _positive(table: pl.DataFrame, column: str, option: str, where: str) -> pl.Series:
    """The column as floats, every value positive and finite, else an error naming the rows."""
    if column not in table.columns:
        raise ResultsError(
            f"{option} {column}: no such column in {where} (its columns: "
            f"{', '.join(table.columns)})"
        )
    try:
        values = table[column].cast(pl.Float64, strict=True)
    except pl.exceptions.PolarsError as err:
        raise ResultsError(f"{option} {column} in {where}: not numbers ({err})") from err
    bad = values.is_null() | ~values.is_finite().fill_null(False) | (values <= 0).fill_null(True)
    if bad.any():
        raise ResultsError(f"{option} {column} in {where}: {_rows(bad)} not a positive number")
    return values


def _metric_columns(table: pl.DataFrame, cols: TableColumns, where: str) -> list[str]:
    if cols.metrics:
        return list(cols.metrics)
    if "loss" not in table.columns:
        raise ResultsError(
            f"--metric: {where} has no column `loss`; name the metric column(s) (its columns: "
            f"{', '.join(table.columns)})"
        )
    return ["loss"]


def _d_column(table: pl.DataFrame, cols: TableColumns) -> str | None:
    return cols.d if cols.d is not None else ("D" if "D" in table.columns else None)


def apply_where(
    table: pl.DataFrame, where: dict[str, list[str]], what: str
) -> tuple[pl.DataFrame, str | None]:
    """The rows of `table` where every --where column holds one of its values (compared as
    numbers where the column is numeric and the value one), and a note of what was kept; an
    unknown column or nothing left is a ResultsError naming it."""
    if not where:
        return table, None
    mask = pl.lit(True)
    for col, values in where.items():
        if col not in table.columns:
            raise ResultsError(
                f"--where {col}: no such column in {what} (its columns: {', '.join(table.columns)})"
            )
        mask = mask & pl.any_horizontal([_equals(table, col, v) for v in values])
    kept = table.filter(mask)
    said = "; ".join(f"{c} in {{{', '.join(v)}}}" for c, v in where.items())
    if kept.height == 0:
        raise ResultsError(f"--where {said}: no row of {what} is left")
    return kept, f"--where {said}: {kept.height} of {table.height} rows kept"


def _equals(table: pl.DataFrame, col: str, value: str) -> pl.Expr:
    if table[col].dtype.is_numeric():
        try:
            return pl.col(col) == float(value)
        except ValueError:
            pass
    return pl.col(col).cast(pl.String) == value


def undeclared_varying(
    table: pl.DataFrame, declared: list[str | None], cell: list[str]
) -> list[str]:
    """For each column not `declared` that takes several values within a cell (rows equal in
    the `cell` columns), "COL (k of K cells, rows r1, r2, …)"."""
    rest = [c for c in table.columns if c not in {x for x in declared if x}]
    if not rest:
        return []
    indexed = table.with_row_index("_row", offset=1)
    agg = indexed.group_by(cell).agg(
        *(pl.col(c).n_unique().alias(c) for c in rest), pl.col("_row").min().alias("_row")
    )
    out = []
    for c in rest:
        bad = agg.filter(pl.col(c) > 1).sort("_row")
        if bad.height:
            rows = ", ".join(str(r) for r in bad["_row"].head(3).to_list())
            more = ", …" if bad.height > 3 else ""
            out.append(f"{c} ({bad.height} of {agg.height} cells, from rows {rows}{more})")
    return out


@dataclass(frozen=True)
class TableFilter:
    """What a scaling run asks of a table's rows besides their columns: --where, --strict, and
    whether its N lines hold D or D/N fixed (--lines)."""

    where: dict[str, list[str]] = field(default_factory=dict)
    strict: bool = False
    lines: str = "D"


def table_values(
    path: str | Path, cols: TableColumns, rows: TableFilter | None = None
) -> TrialValues:
    """The table's points as trial values (see the module docstring)."""
    rows = rows or TableFilter()
    table = read_table(path)
    where = Path(path).name
    if table.height == 0:
        raise ResultsError(f"--points {where}: the table has no rows")
    table, kept = apply_where(table, rows.where, where)
    notes = [f"points: {table.height} rows of {where}"] + ([kept] if kept else [])
    n = _positive(table, cols.n, "--n-col", where)
    if distinct_count(n.to_numpy()) < MIN_SIZES:
        raise ResultsError(
            f"--n-col {cols.n} in {where}: {distinct_count(n.to_numpy())} distinct value(s); "
            f"a fit needs {MIN_SIZES} or more"
        )
    d_col = _d_column(table, cols)
    d = _positive(table, d_col, "--d-col", where) if d_col else None
    if d is not None and distinct_count(d.to_numpy()) < JOINT_MIN_D:
        raise ResultsError(
            f"--d-col {d_col} in {where}: {distinct_count(d.to_numpy())} distinct value(s); a fit "
            f"against D (and the joint L(N, D)) needs {JOINT_MIN_D} or more (leave --d-col out to "
            "fit against N alone)"
        )
    _check_declared(table, cols, d_col, rows, notes, where)
    base = _base_frame(table, cols, n, d, where)
    gcols = ["group"] if cols.group is not None else []
    if rows.lines == "ratio" and d is not None:
        base = base.with_columns((pl.col("D") / pl.col("N")).alias("ratio"))
    parts = []
    for metric in _metric_columns(table, cols, where):
        values = _positive(table, metric, "--metric", where)
        parts.append(base.with_columns(pl.lit(metric).alias("metric"), values.alias("value")))
    frame = pl.concat(parts).sort([*gcols, "metric", "N", "step", "trial_id"])
    k = _flops_per_param_token(base, cols.flops, notes) if cols.flops else 6.0
    return TrialValues(
        frame,
        gcols,
        notes,
        None,
        d_steps=True,
        flops_per_param_token=k,
        seeded=cols.seed is not None,
    )


def _check_declared(
    table: pl.DataFrame,
    cols: TableColumns,
    d_col: str | None,
    rows: TableFilter,
    notes: list[str],
    where: str,
) -> None:
    """The columns not declared that vary within an (N, D) cell: a note, or with --strict an
    error (their rows would be averaged into one point)."""
    for option, column in (("--seed-column", cols.seed), ("--group", cols.group)):
        if column is not None and column not in table.columns:
            raise ResultsError(f"{option} {column}: no such column in {where}")
    cell = [c for c in (cols.group, cols.n, d_col) if c]
    declared = [*cols.declared(), d_col, cols.flops, cols.weights, *rows.where]
    varying = undeclared_varying(table, declared, cell)
    if not varying:
        return
    what = "(N, D)" if d_col else "N (no D axis)"
    text = (
        f"columns not declared vary within {what} cells, whose rows are averaged into one "
        f"point each: {'; '.join(varying)}; declare them (--d-col, --group, --seed-column, "
        "--where) or --strict refuses such a table"
    )
    if rows.strict:
        raise ResultsError(f"--strict: {text}")
    notes.append(text)


def _base_frame(
    table: pl.DataFrame, cols: TableColumns, n: pl.Series, d: pl.Series | None, where: str
) -> pl.DataFrame:
    """One row per table row: N, D, and the declared seed, group, FLOP and weight columns."""
    base = pl.DataFrame(
        {
            "experiment": where,
            "trial_id": [str(i + 1) for i in range(table.height)],
            "N": n,
            "D": d if d is not None else pl.Series([None] * table.height, dtype=pl.Float64),
        }
    )
    if cols.flops:
        if d is None:
            raise ResultsError(f"--flops {cols.flops}: compute needs a D column too (--d-col)")
        base = base.with_columns(_positive(table, cols.flops, "--flops", where).alias("C"))
    if cols.weights:
        base = base.with_columns(_positive(table, cols.weights, "--weights", where).alias("weight"))
    for column, name in ((cols.seed, "seed"), (cols.group, "group")):
        if column is not None:
            base = base.with_columns(table[column].cast(pl.String).alias(name))
    return base.with_columns(
        pl.col("N").map_elements(lambda v: f"N={v:.4g}", return_dtype=pl.String).alias("model"),
        # A size is (N, D): the step of a store's size key holds D here (lines name it so).
        pl.col("D").fill_null(0.0).round(0).cast(pl.Int64).alias("step"),
    )


def _flops_per_param_token(base: pl.DataFrame, column: str, notes: list[str]) -> float:
    """k in C = k·N·D from a FLOP column: the median of C/(N·D), noted when it varies."""
    ratio = base["C"] / (base["N"] * base["D"])
    k = float(ratio.median())
    spread = float((ratio.max() - ratio.min()) / k)
    if spread > 0.1:
        notes.append(
            f"--flops {column} / (N·D) ranges over {spread:.0%} of its median {k:.3g}: "
            "the compute-optimal allocation assumes one k in C = k·N·D"
        )
    return k
