"""The scaling command on a points table (`analysis scaling --points FILE`): the fits a store
gets — plain, saturating and Huber per line, the joint L(N, D) with intervals, its
compute-optimal allocation, the held-out checks — on (N, D, metric) rows made anywhere. The
field's fits are always on (a table is fitted for them), with 1,000 resamples unless
--fit-bootstrap says otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.result import Result
from analysis.scaling.command import add_comparison, compare_spec, fit_all, method_lines
from analysis.scaling.settings import ScalingSettings, parse_where
from analysis.scaling.table_points import TableColumns, TableFilter, table_values
from records.errors import ResultsError

TABLE_FIT_BOOTSTRAP = 1000
"""--fit-bootstrap's default for a table: 1,000 resamples of 240 points take ~15 s here."""
STORE_ONLY = {
    "value": "--value",
    "lr": "--lr",
    "select_by": "--select-by",
    "gate_only": "--gate",
    "pool_experiments": "--pool-experiments",
    "models": "--models",
    "params": "--params",
    "by": "--by",
    "statuses": "--status",
}
"""Settings (and their flags) that choose a store's trials; a table has none to choose."""


def scaling_points(
    path: str | Path,
    columns: TableColumns | None = None,
    settings: ScalingSettings | None = None,
    **fields: Any,
) -> Result:
    """Every scaling fit of the table at `path` (CSV or Parquet), its columns named by
    `columns`; `fields` override fields of `settings` by name."""
    s = replace(settings or ScalingSettings(), **fields)
    default = ScalingSettings()
    used = [flag for name, flag in STORE_ONLY.items() if getattr(s, name) != getattr(default, name)]
    if used:
        raise ResultsError(
            f"{', '.join(used)}: choose(s) trials of a store, not rows of --points "
            "(--group splits a table)"
        )
    s = replace(s, robust=True, n_boot_fit=s.n_boot_fit or TABLE_FIT_BOOTSTRAP)
    cols = columns or TableColumns()
    rows = TableFilter(parse_where(s.where), s.strict, s.lines)
    data = table_values(path, cols, rows)
    result = Result("scaling", f"Scaling: {Path(path).name}", notes=list(data.notes[1:]))
    result.header.append(data.notes[0])
    result.settings = s.as_json(store=False) | {
        "points": str(path),
        "columns": _columns_json(cols),
    }
    has_d = data.frame["D"].is_not_null().any()
    axes = list(s.axes or (["N", "D", "C"] if has_d else ["N"]))
    if not has_d and [a for a in axes if a != "N"]:
        raise ResultsError("--axis D and C need a D column (--d-col)")
    result.settings["axes"] = axes
    k = data.flops_per_param_token
    d_text = f"D = {cols.d or 'D'}; " if has_d else ""
    per = "per-size means over seeds" if s.aggregate == "size" else "every row a point"
    result.header += method_lines(s, axes, f"N = {cols.n}; {d_text}points: {per}")
    result.header.append(
        f"the field's fits always on for a table: Huber per line, joint L(N, D) where D "
        f"varies; intervals from {s.n_boot_fit} bootstrap resamples (seed {s.seed}); C = "
        f"{k:g}·N·D" + (f" (the median of {cols.flops} / (N·D))" if cols.flops else "")
    )
    spec = compare_spec(s, "group", f"--group {cols.group}" if cols.group else "--group", data)
    chosen = list(dict.fromkeys(data.frame["metric"].to_list()))
    fit_all(result, data, chosen, axes, s)
    if spec is not None:
        add_comparison(result, data, chosen, spec)
    return result


def _columns_json(cols: TableColumns) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(cols).items()}
