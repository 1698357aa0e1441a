"""The tables of losses compared across scale (loss_comparison.py), built from their records
alone: the exponent test, the multipliers, the paired differences per size and their trend."""

from __future__ import annotations

from analysis.arms import format_value
from analysis.result import DASH, Column, Record, Table, fmt, fmt_ci, fmt_p, fmt_signed
from analysis.scaling.loss_comparison import Compared
from analysis.scaling.tables import table, value


def _lead(rest: list[str]) -> list[Column]:
    return [
        *(value(c) for c in rest),
        value("metric"),
        Column("at", lambda r: r["at"] or ""),
        value("group"),
        value("reference"),
    ]


def _with_ci(key: str, low: str = "low", high: str = "high", digits: int = 4):
    def cell(r: Record) -> str:
        if r[key] is None:
            return DASH
        return f"{fmt_signed(r[key], digits)} {fmt_ci(r[low], r[high])}"

    return cell


def exponent_test_table(records: list[Record], rest: list[str], pct: str) -> Table:
    """b of each group and of the reference, their difference with its intervals and the
    F-test's p."""
    columns = [
        *_lead(rest),
        Column("sizes", lambda r: f"{r['sizes']} / {r['sizes_ref']}"),
        Column("b / b ref", lambda r: f"{fmt(r['exponent'])} / {fmt(r['exponent_ref'])}"),
        Column(f"b − b ref ({pct} CI)", _with_ci("difference")),
        value("ci_method"),
        Column(f"bootstrap {pct} CI", lambda r: fmt_ci(r["boot_low"], r["boot_high"])),
        Column("same b?", lambda r: DASH if r["p"] is None else fmt_p(r["p"])),
        Column("shared b", lambda r: fmt(r["shared_exponent"])),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_exponent_test",
        "same exponent as the reference? plain laws L = A·N^−b per group and with b shared, "
        "fitted on log L over the cell means; p: F-test of the nested fits",
        columns,
        records,
    )


def _n_cell(r: Record) -> str:
    return "any N" if r["n"] is None else f"{r['n']:.4g} ({r['where']})"


def multipliers_table(records: list[Record], rest: list[str], pct: str) -> Table:
    """The parameter multiplier of each group against the reference, per N and shared."""
    columns = [
        *_lead(rest),
        value("exponents"),
        Column("N", _n_cell),
        Column(
            f"multiplier ({pct} CI)",
            lambda r: f"{fmt(r['multiplier'])} {fmt_ci(r['low'], r['high'])}",
        ),
        value("ci_method"),
        Column("reference's N*", lambda r: DASH if r["n_ref"] is None else f"{r['n_ref']:.4g}"),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_multipliers",
        "parameter multiplier: the N* at which the reference's fit reaches the loss's fitted "
        "value, over the loss's N (above 1: the loss is worth that many times the parameters)",
        columns,
        records,
    )


def paired_table(records: list[Record], rest: list[str], pct: str) -> Table:
    """The paired difference ln L − ln L_ref per size over the seeds both have."""
    columns = [
        *_lead(rest),
        Column("N", lambda r: f"{r['n']:.4g}"),
        value("pairs", str),
        Column(f"ln L − ln L ref ({pct} CI)", _with_ci("difference")),
        Column("L − L ref", lambda r: fmt_signed(r["loss_gap"])),
    ]
    return table(
        "scaling_paired_differences",
        "paired difference per size: the same seed under the loss and the reference",
        columns,
        records,
    )


def trend_table(records: list[Record], rest: list[str], pct: str) -> Table:
    """The slope of the paired differences on ln N."""
    columns = [
        *_lead(rest),
        Column("sizes (pairs)", lambda r: f"{r['sizes']} ({r['pairs']})"),
        Column(f"slope per ln N ({pct} CI)", _with_ci("slope", digits=3)),
        Column("p", lambda r: DASH if r["p"] is None else fmt_p(r["p"])),
        Column("trend", lambda r: format_value(r["trend"]) if r["trend"] else DASH),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_paired_trend",
        "does the effect change with N? least-squares slope of the per-size paired difference "
        "ln L − ln L ref on ln N, t-interval over sizes (−(b − b ref) under the plain laws)",
        columns,
        records,
    )


def loss_to_loss_table(records: list[Record], rest: list[str], pct: str) -> Table:
    """The loss-to-loss fits: L − E = K·(L ref − E ref)^κ across sizes."""
    columns = [
        *_lead(rest),
        value("form"),
        value("sizes", str),
        Column("E / E ref", lambda r: f"{fmt(r['E'])} / {fmt(r['E_ref'])}"),
        Column("K", lambda r: fmt(r["K"])),
        Column(
            f"κ ({pct} CI)",
            lambda r: (
                DASH if r["kappa"] is None else f"{fmt(r['kappa'])} {fmt_ci(r['low'], r['high'])}"
            ),
        ),
        value("ci_method"),
        Column("RMS log residual", lambda r: fmt(r["rms"], 3)),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_loss_to_loss",
        "loss-to-loss (Brandfonbrener et al. 2024): L − E = K·(L ref − E ref)^κ over the sizes "
        "both have; plain: E = 0; shifted: E from each saturating fit",
        columns,
        records,
    )


def comparison_tables(found: Compared, rest: list[str], level: float) -> list[Table]:
    """The comparison's tables that have rows, in order (`found`: loss_comparison.Compared)."""
    pct = f"{level * 100:g}%"
    out = []
    if found.exponent:
        out.append(exponent_test_table(found.exponent, rest, pct))
    if found.multipliers:
        out.append(multipliers_table(found.multipliers, rest, pct))
    if found.paired:
        out.append(paired_table(found.paired, rest, pct))
    if found.trend:
        out.append(trend_table(found.trend, rest, pct))
    if found.loss_to_loss:
        out.append(loss_to_loss_table(found.loss_to_loss, rest, pct))
    return out
