"""Every table of the scaling command, built from its records alone
(`analysis.result.records_table`); all of the command's cell formats are here."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import polars as pl

from analysis.arms import format_value
from analysis.result import (
    DASH,
    Column,
    Record,
    Table,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_pct,
    fmt_pm,
    records_table,
)
from analysis.scaling.rules import follows_power_law
from records.metric_names import direction

# Where a group holds anything fixed, the `at` column says what; one line per group needs none.
table = partial(records_table, optional=("at",))


def value(key: str, show: Callable[[Any], str] = format_value) -> Column:
    """A column holding one field of the record, shown by `show`."""
    return Column(key, lambda r: show(r[key]))


def _interval(key: str, low: str, high: str, digits: int = 4) -> Callable[[Record], str]:
    """ "value [low, high]", or the dash without a value."""

    def cell(r: Record) -> str:
        if r[key] is None:
            return DASH
        return f"{fmt(r[key], digits)} {fmt_ci(r[low], r[high])}"

    return cell


def _pair(a: str, b: str, show: Callable[[Any], str]) -> Callable[[Record], str]:
    return lambda r: f"{show(r[a])} / {show(r[b])}"


def _diff(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None else x - y


def _fit_lead(gcols: list[str]) -> list[Column]:
    return [
        *(value(c) for c in gcols),
        value("metric"),
        value("axis"),
        Column("at", lambda r: r["at"] or ""),
        Column("sizes (points)", lambda r: f"{r['sizes']} ({r['points']})"),
    ]


def _power_law_cell(r: Record) -> str:
    if r["a"] is None:
        return r["no_fit_reason"] or DASH
    ci = None if r["a_ci_low"] is None else (r["a_ci_low"], r["a_ci_high"])
    return follows_power_law(r["a"], r["a_ci_method"], ci, r["aicc_constant"], r["aicc"])


def power_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """The plain power law per (group, metric, axis, line)."""
    columns = [
        *_fit_lead(gcols),
        Column(f"a ({pct} CI)", _interval("a", "a_ci_low", "a_ci_high")),
        Column("R²", lambda r: DASH if r["a"] is None else fmt(r["r2"])),
        Column("a = 0?", lambda r: DASH if r["p_slope"] is None else fmt_p(r["p_slope"])),
        Column("ΔAICc vs constant", lambda r: fmt(_diff(r["aicc"], r["aicc_constant"]), 3)),
        Column("LOO err", lambda r: fmt_pct(r["loo_error"])),
        Column("extrap. err", lambda r: fmt_pct(r["extrapolation_error"], signed=True)),
        Column("power law?", _power_law_cell),
    ]
    return table("scaling_power", "plain power law log M = c + a·log N", columns, records)


def saturating_table(records: list[Record], gcols: list[str], pct: str, show: bool) -> Table:
    """The saturating form per (group, metric, axis, line)."""
    columns = [
        *_fit_lead(gcols),
        Column(f"E ({pct} CI)", _interval("E", "E_ci_low", "E_ci_high")),
        Column(f"a ({pct} CI)", _interval("a", "a_ci_low", "a_ci_high")),
        Column("R²", lambda r: DASH if r["E"] is None else fmt(r["r2"])),
        Column("LOO err", lambda r: fmt_pct(r["loo_error"])),
        Column("extrap. err", lambda r: fmt_pct(r["extrapolation_error"], signed=True)),
        Column("ΔAICc vs plain", lambda r: fmt(r["delta_aicc_vs_plain"], 3)),
        Column("F-test p", lambda r: DASH if r["f_test_p"] is None else fmt_p(r["f_test_p"])),
        Column("preferred", lambda r: r["preferred"] or DASH),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_saturating",
        "saturating power law M = E + A·N^a (E: irreducible part)",
        columns,
        records,
        show=show,
    )


def _line_key(r: Record, gcols: list[str]) -> tuple:
    return (*(r[c] for c in gcols), r["axis"], r["at"])


def verdict_table(
    records: list[Record], saturating: list[Record], gcols: list[str], pct: str
) -> Table:
    """CE against EE per (group, split, axis, line); CE's saturating E with its interval comes
    from the saturating table's record of the same line."""
    sat_of = {(*_line_key(s, gcols), s["metric"]): s for s in saturating}

    def ce_saturating(r: Record) -> str:
        if r["ce_preferred_form"] == "saturating":
            s = sat_of[(*_line_key(r, gcols), f"eval/{r['split']}/ce")]
            return f"yes: E={fmt(s['E'], 3)} {fmt_ci(s['E_ci_low'], s['E_ci_high'])}"
        return "no" if r["ce_preferred_form"] == "plain" else DASH

    columns = [
        *(value(c) for c in gcols),
        value("split"),
        value("axis"),
        Column("at", lambda r: r["at"] or ""),
        value("sizes", str),
        Column("R² CE / EE", _pair("r2_ce", "r2_ee", fmt)),
        Column(
            f"ΔR² EE − CE ({pct} CI)",
            _interval("delta_r2", "delta_r2_ci_low", "delta_r2_ci_high", 3),
        ),
        Column("LOO CE / EE", _pair("loo_ce", "loo_ee", fmt_pct)),
        Column(
            "extrap. CE / EE",
            _pair("extrapolation_ce", "extrapolation_ee", lambda x: fmt_pct(x, True)),
        ),
        Column("CE saturating (E)", ce_saturating),
        value("verdict"),
    ]
    return table(
        "scaling_verdict",
        "verdict: which follows a power law better, CE or its error entropy EE",
        columns,
        records,
    )


def _share_cell(r: Record) -> str:
    half = None if r["ci_high"] is None else r["ci_high"] - r["ee_over_ce"]
    return fmt_pm(r["ee_over_ce"], half)


def share_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """EE/CE per size."""
    columns = [
        *(value(c) for c in gcols),
        value("split"),
        Column("at", lambda r: r["at"] or ""),
        Column("size", lambda r: format_value(r["model"])),
        Column("x", lambda r: f"{r['x']:.4g}"),
        value("trials", str),
        Column("EE/CE", _share_cell),
    ]
    return table(
        "scaling_ee_share",
        f"error entropy's share of CE per size (mean ± {pct} CI over trials)",
        columns,
        records,
    )


def trend_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """The slope of EE/CE per decade of the axis."""
    columns = [
        *(value(c) for c in gcols),
        value("split"),
        Column("at", lambda r: r["at"] or ""),
        value("sizes", str),
        Column(
            f"slope per decade ({pct} CI)",
            _interval("slope_per_decade", "ci_low", "ci_high", 3),
        ),
        Column("p", lambda r: fmt_p(r["p"])),
        value("trend"),
    ]
    return table(
        "scaling_ee_share_trend",
        "trend of EE/CE with size: least-squares slope per decade of the axis",
        columns,
        records,
    )


def lr_table(records: list[Record], gcols: list[str]) -> Table:
    """The learning rate chosen per size."""
    select_by = records[0]["select_by"]
    want = direction(select_by)
    columns = [
        *(value(c) for c in gcols),
        value("model"),
        Column("N", lambda r: f"{r['N']:.4g}"),
        value("lr"),
        Column(f"mean {select_by}", lambda r: fmt(r["mean"])),
        Column("seeds", lambda r: str(r["trials"])),
        Column("lrs tried", lambda r: ", ".join(format_value(v) for v in r["lrs_tried"])),
        Column("in grid", lambda r: r["lr_position"]),
    ]
    return table(
        "scaling_lr",
        f"learning rate per size: the best mean {select_by} ({want}) over seeds",
        columns,
        records,
    )


def hidden_table(name: str, title: str, records: list[Record]) -> Table:
    """A table of numbers only (left out of Markdown and LaTeX), its rows every field of its
    records so that JSON and the report's files carry them too."""
    keys = list(dict.fromkeys(k for r in records for k in r))
    rows = [[_cell(r.get(k)) for k in keys] for r in records]
    data = pl.DataFrame(records, infer_schema_length=None) if records else None
    return Table(name=name, title=title, columns=keys, rows=rows, show=False, data=data)


def _cell(v: Any) -> str:
    if v is None:
        return DASH
    if isinstance(v, float):
        return fmt(v, 6)
    if isinstance(v, list | tuple):
        return ", ".join(_cell(x) for x in v)
    return str(v)


def points_table(records: list[Record]) -> Table:
    """The points fitted (numbers only)."""
    title = "the points fitted (per-size means ± CI over trials, or trials)"
    return hidden_table("scaling_points", title, records)


def _yes_no(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def gate_tables(found: dict[str, Any], gcols: list[str]) -> list[Table]:
    """The sanity gate: its summary, every adjacent step of sizes, every size's learning rate."""
    lead = [*(value(c) for c in gcols), value("split"), Column("at", lambda r: r["at"] or "")]
    summary = [
        *lead,
        value("sizes", str),
        Column("CE per size (by N)", lambda r: ", ".join(fmt(m, 3) for m in r["ce_means"])),
        Column("pooled seed sd", lambda r: fmt(r["pooled_sd"], 3)),
        Column("steps separated", lambda r: f"{r['steps_separated']}/{r['steps']}"),
        Column("lr inside grid", lambda r: f"{r['lr_inside']}/{r['lr_sizes']}"),
        Column("gate", lambda r: _yes_no(r["passed"])),
    ]
    steps = [
        *lead,
        Column("step", lambda r: f"{format_value(r['from'])} → {format_value(r['to'])}"),
        Column("N", lambda r: f"{r['N_from']:.4g} → {r['N_to']:.4g}"),
        Column("CE", lambda r: f"{fmt(r['ce_from'])} → {fmt(r['ce_to'])}"),
        Column("seeds", lambda r: f"{r['seeds_from']}, {r['seeds_to']}"),
        Column("drop", lambda r: fmt(r["drop"], 3)),
        Column("> 2·s_pooled", lambda r: fmt(r["threshold"], 3)),
        Column("separated", lambda r: _yes_no(r["separated"])),
    ]
    lr = [
        *(value(c) for c in gcols),
        value("model"),
        Column("N", lambda r: f"{r['N']:.4g}"),
        Column("lr", lambda r: DASH if r["lr"] is None else format_value(r["lr"])),
        Column("lrs tried", lambda r: ", ".join(format_value(v) for v in r["lrs_tried"]) or DASH),
        value("lr_position"),
        Column("inside", lambda r: _yes_no(r["inside"])),
    ]
    lr[-2] = Column("in grid", lr[-2].cell)
    return [
        table(
            "scaling_gate",
            "sanity gate: CE falls with N (every step by > 2 pooled seed sds) and every best lr "
            "lies inside its grid",
            summary,
            found["summary"],
        ),
        table(
            "scaling_gate_steps",
            "gate: held-out CE from each size to the next larger one (means over seeds)",
            steps,
            found["steps"],
        ),
        table(
            "scaling_gate_lr", "gate: each size's chosen learning rate in its grid", lr, found["lr"]
        ),
    ]


def huber_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """The saturating form by the Huber loss (Chinchilla's approach 3), the plain exponent
    beside it."""
    columns = [
        *_fit_lead(gcols),
        Column(f"E ({pct} CI)", _interval("E", "E_ci_low", "E_ci_high")),
        Column(f"α ({pct} CI)", _interval("alpha", "alpha_ci_low", "alpha_ci_high")),
        Column("A", lambda r: fmt(r["A"])),
        Column(f"plain a ({pct} CI)", _interval("plain_a", "plain_a_ci_low", "plain_a_ci_high")),
        Column("LOO err", lambda r: fmt_pct(r["loo_error"])),
        Column("extrap. err", lambda r: fmt_pct(r["extrapolation_error"], signed=True)),
        Column(
            "starts at the optimum",
            lambda r: DASH if r["starts"] is None else f"{r['starts_agreeing']}/{r['starts']}",
        ),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_huber",
        "saturating form M = E + A·N^−α by Huber loss (δ = 1e-3) on log M, a grid of starts; "
        "intervals: bootstrap over (size, seed) units",
        columns,
        records,
    )


def prediction_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """CE against EE by their prediction errors, per form, with paired bootstrap intervals."""
    columns = [
        *(value(c) for c in gcols),
        value("split"),
        value("axis"),
        Column("at", lambda r: r["at"] or ""),
        value("sizes", str),
        value("form"),
        Column("LOO CE / EE", _pair("loo_ce", "loo_ee", fmt_pct)),
        Column(
            f"ΔLOO EE − CE ({pct} CI)",
            lambda r: (
                _interval("loo_diff", "loo_diff_ci_low", "loo_diff_ci_high", 3)(r)
                if "loo_diff" in r
                else DASH
            ),
        ),
        Column("|extrap.| CE / EE", _pair("extrap_ce", "extrap_ee", fmt_pct)),
        Column(
            f"Δ|extrap.| EE − CE ({pct} CI)",
            lambda r: (
                _interval("extrap_diff", "extrap_diff_ci_low", "extrap_diff_ci_high", 3)(r)
                if "extrap_diff" in r
                else DASH
            ),
        ),
        Column("LOO favours", lambda r: r["loo_favours"] or DASH),
        Column("extrap. favours", lambda r: r["extrap_favours"] or DASH),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_prediction",
        "CE against EE by prediction error (leave-one-size-out; extrapolation to the largest "
        "size), EE − CE with paired bootstrap intervals over (size, seed) units",
        columns,
        records,
    )


def _resamples_cell(r: Record) -> str:
    """ "fitted (left out: degenerate, unconverged; rescued)"."""
    if r["bootstrap_resamples"] is None:
        return DASH
    out = f"{r['bootstrap_resamples']}"
    left = []
    if r.get("bootstrap_degenerate"):
        left.append(f"{r['bootstrap_degenerate']} too few distinct N or D")
    if r.get("bootstrap_not_converged"):
        left.append(f"{r['bootstrap_not_converged']} not converged")
    if left:
        out += f" (left out: {', '.join(left)})"
    if r.get("bootstrap_rescued"):
        out += f"; {r['bootstrap_rescued']} continued or refitted from the grid"
    return out


def joint_table(
    records: list[Record], gcols: list[str], pct: str, form: str = "L(N, D) = E + A·N^−α + B·D^−β"
) -> Table:
    """The joint form L(N, D) per group and metric, with bootstrap intervals and the exponents of
    the compute-optimal allocation; the resamples and what became of them, and the flags of a
    doubtful fit (flags.py)."""
    columns = [
        *(value(c) for c in gcols),
        value("metric"),
        value("points", str),
        Column(f"E ({pct} CI)", _interval("E", "E_ci_low", "E_ci_high")),
        Column(f"A ({pct} CI)", _interval("A", "A_ci_low", "A_ci_high")),
        Column(f"α ({pct} CI)", _interval("alpha", "alpha_ci_low", "alpha_ci_high")),
        Column(f"B ({pct} CI)", _interval("B", "B_ci_low", "B_ci_high")),
        Column(f"β ({pct} CI)", _interval("beta", "beta_ci_low", "beta_ci_high")),
        Column(f"N* ∝ C^a ({pct} CI)", _interval("a_opt", "a_opt_ci_low", "a_opt_ci_high", 3)),
        Column(f"D* ∝ C^b ({pct} CI)", _interval("b_opt", "b_opt_ci_low", "b_opt_ci_high", 3)),
        Column(
            "starts at the optimum",
            lambda r: DASH if r["starts"] is None else f"{r['starts_agreeing']}/{r['starts']}",
        ),
        Column("resamples fitted", _resamples_cell),
        Column("flags", lambda r: r.get("flags") or ""),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_joint",
        f"joint form {form} by Huber loss on log L; intervals: bootstrap over cells (N, D), "
        "each resample refitted from the fit (how the cells were drawn: the notes)",
        columns,
        records,
        optional=("flags", "remark", "at"),
    )


def covariance_table(records: list[Record]) -> Table:
    """The joint fit's parameter covariance over its resamples (numbers only)."""
    return hidden_table(
        "scaling_joint_covariance",
        "covariance of (E, A, α, B, β) over the joint fit's bootstrap resamples",
        records,
    )


def _sci(x: float | None) -> str:
    return DASH if x is None else f"{x:.3g}"


def _sci_interval(key: str) -> Callable[[Record], str]:
    def cell(r: Record) -> str:
        if r[key] is None:
            return DASH
        lo, hi = r[f"{key}_ci_low"], r[f"{key}_ci_high"]
        ci = "" if lo is None else f" [{lo:.3g}, {hi:.3g}]"
        return f"{r[key]:.3g}{ci}"

    return cell


def optimal_table(records: list[Record], gcols: list[str], pct: str, k: float) -> Table:
    """The compute-optimal N*, D*, tokens per parameter and loss at each budget."""
    columns = [
        *(value(c) for c in gcols),
        value("metric"),
        Column("C (FLOPs)", lambda r: _sci(r["C"])),
        Column(f"N* ({pct} CI)", _sci_interval("N_opt")),
        Column(f"D* ({pct} CI)", _sci_interval("D_opt")),
        Column(f"tokens per parameter ({pct} CI)", _sci_interval("tokens_per_param")),
        Column(
            f"L(N*, D*) ({pct} CI)", _interval("loss_opt", "loss_opt_ci_low", "loss_opt_ci_high")
        ),
    ]
    return table(
        "scaling_optimal",
        f"compute-optimal allocation of the joint fit: N*, D* minimising L at C = {k:g}·N·D",
        columns,
        records,
    )


def _holdout_flag(r: Record) -> str:
    return "outside its interval more than chance allows" if r.get("missed") else ""


def holdout_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """Every fit refitted without its largest N, predicting it, against the prediction
    interval."""
    columns = [
        *(value(c) for c in gcols),
        value("metric"),
        value("axis"),
        Column("at", lambda r: r["at"] or ""),
        value("form"),
        value("held_out"),
        Column(
            "points fitted / held out",
            lambda r: f"{r['fit_points'] or DASH} / {r['held_out_points'] or DASH}",
        ),
        Column(f"predicted ({pct} PI)", _interval("predicted", "pi_low", "pi_high")),
        Column("observed", lambda r: fmt(r["observed"])),
        Column(
            "error",
            lambda r: (
                fmt_pct(r["error"], signed=True)
                if r["error"] is not None
                else fmt_pct(r["mean_abs_error"])
                + (" (mean |err|)" if r["mean_abs_error"] is not None else "")
            ),
        ),
        Column(
            "inside PI",
            lambda r: DASH if r["inside"] is None else f"{r['inside']}/{r['held_out_points']}",
        ),
        Column("flag", _holdout_flag),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "scaling_holdout",
        "held-out check: each fit without its largest size or compute predicting it, with a "
        "prediction interval (plain: least squares on log M; huber, joint: bootstrap curves × "
        "a resampled log residual)",
        columns,
        records,
        optional=("at", "flag", "remark"),
    )


def counts_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """The N lines' exponents with N counted without and with embeddings, and the verdict."""
    columns = [
        *(value(c) for c in gcols),
        value("metric"),
        Column("at", lambda r: r["at"] or ""),
        Column(
            f"plain a, non-emb. ({pct} CI)",
            _interval("a_non_embedding", "a_non_embedding_ci_low", "a_non_embedding_ci_high"),
        ),
        Column(
            f"plain a, total ({pct} CI)", _interval("a_total", "a_total_ci_low", "a_total_ci_high")
        ),
        Column(
            f"Huber α, non-emb. ({pct} CI)",
            _interval(
                "alpha_non_embedding", "alpha_non_embedding_ci_low", "alpha_non_embedding_ci_high"
            ),
        ),
        Column(
            f"Huber α, total ({pct} CI)",
            _interval("alpha_total", "alpha_total_ci_low", "alpha_total_ci_high"),
        ),
        Column("embeddings in the smallest", lambda r: fmt_pct(r["embedding_share_smallest"])),
        Column("verdict", lambda r: r["verdict"]),
    ]
    return table(
        "scaling_param_counts",
        "exponents against N with N counted without embeddings (non-emb.) and with them (total)",
        columns,
        records,
    )


def planned_table(records: list[Record], gcols: list[str], pct: str) -> Table:
    """`predict`: the value at each planned run per group, with its prediction interval."""
    columns = [
        *(value(c) for c in gcols),
        value("metric"),
        Column("N", lambda r: fmt(r["N"], 4)),
        Column("D", lambda r: DASH if r.get("D") is None else fmt(r["D"], 4)),
        value("points", str),
        Column(f"predicted ({pct} PI)", _interval("predicted", "pi_low", "pi_high")),
        Column("against the largest fitted", lambda r: r["beyond"] or DASH),
        Column("remark", lambda r: r["remark"] or ""),
    ]
    return table(
        "prediction",
        "predicted value at each planned run (one fit per group), with its prediction interval",
        columns,
        records,
    )
