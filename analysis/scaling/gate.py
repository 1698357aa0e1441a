"""The sanity gate a scaling study must pass before its hypotheses are registered: at the chosen
learning rates held-out CE falls with N, and each size's best learning rate lies inside the grid
it tried. A family whose CE does not fall with N has no scaling law to decompose.

Precisely, per fit group, split and line (a step budget), with sizes ordered by N:

- every adjacent step is separated: mean_CE(N_i) − mean_CE(N_{i+1}) > 2·s_pooled, where the
  means are over the seeds of each size (at its chosen lr) and s_pooled is the pooled
  within-size seed standard deviation of the line, sqrt(Σ_i (k_i − 1)·s_i² / Σ_i (k_i − 1))
  over its sizes (k_i seeds, sample sd s_i). Pooled rather than per size: at 2–3 seeds a
  size's own sd has 1–2 degrees of freedom and is itself noisier than the effect; pooling uses
  every size's. With one seed per size there is no s_pooled and no step passes (the separation
  cannot be shown);
- every size's chosen learning rate is "inside" its grid (`rules.lr_position`): a smaller and a
  larger rate were tried and did worse. A single learning rate is no grid, so it fails too.

The gate passes when every (group, split, line) passes both.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from analysis.arms import format_value, plain_value
from analysis.scaling.points import aggregate_points, lines
from analysis.scaling.rules import GATE_SDS, lr_position, step_separated

Record = dict[str, Any]


def pooled_sd(sds: list[float | None], counts: list[int]) -> float | None:
    """sqrt(Σ (k_i − 1)·s_i² / Σ (k_i − 1)) over the sizes with at least two seeds; None
    without any."""
    num = sum((k - 1) * s * s for s, k in zip(sds, counts, strict=True) if s is not None and k > 1)
    dof = sum(k - 1 for s, k in zip(sds, counts, strict=True) if s is not None and k > 1)
    return math.sqrt(num / dof) if dof > 0 else None


def ce_steps(line: pl.DataFrame, key: Record) -> tuple[list[Record], Record]:
    """The records of every adjacent step of one line's per-size CE points (sorted by N), and
    the line's summary."""
    pts = line.sort("x")
    means, sds, counts = pts["y"].to_list(), pts["sd"].to_list(), pts["trials"].to_list()
    models, ns = pts["model"].to_list(), pts["x"].to_list()
    sp = pooled_sd(sds, counts)
    steps = []
    for i in range(len(means) - 1):
        drop = means[i] - means[i + 1]
        steps.append(
            {
                **key,
                "from": models[i],
                "to": models[i + 1],
                "N_from": ns[i],
                "N_to": ns[i + 1],
                "ce_from": means[i],
                "ce_to": means[i + 1],
                "seeds_from": counts[i],
                "seeds_to": counts[i + 1],
                "drop": drop,
                "pooled_sd": sp,
                "threshold": None if sp is None else GATE_SDS * sp,
                "separated": step_separated(drop, sp),
            }
        )
    summary = {
        **key,
        "sizes": len(means),
        "ce_means": means,
        "pooled_sd": sp,
        "steps": len(steps),
        "steps_separated": sum(s["separated"] for s in steps),
        "ce_falls": len(steps) > 0 and all(s["separated"] for s in steps),
    }
    return steps, summary


def lr_records(frame: pl.DataFrame, gcols: list[str], chosen: list[Record] | None) -> list[Record]:
    """Per (group, size): the chosen learning rate and where it lies in the grid tried. From the
    learning-rate choice when the rate varied, else from the trials (one rate: no grid)."""
    if chosen is not None:
        rows = [{**r, "lrs_tried": list(r["lrs_tried"])} for r in chosen]
    else:
        size = [*gcols, "model", "N"]
        lr = pl.col("lr") if "lr" in frame.columns else pl.lit(None, pl.Float64())
        per = (
            frame.with_columns(lr.alias("lr"))
            .group_by(size)
            .agg(pl.col("lr").drop_nulls().unique().sort().alias("lrs_tried"))
            .sort(["N", *gcols], nulls_last=True)
        )
        rows = [
            {
                **{c: plain_value(r[c]) for c in gcols},
                "model": r["model"],
                "N": r["N"],
                "lr": r["lrs_tried"][0] if len(r["lrs_tried"]) == 1 else None,
                "lrs_tried": list(r["lrs_tried"]),
            }
            for r in per.iter_rows(named=True)
        ]
    keep = [*gcols, "model", "N", "lr", "lrs_tried"]
    out = []
    for r in rows:
        pos = lr_position(r["lr"], r["lrs_tried"])
        out.append({**{k: r[k] for k in keep}, "lr_position": pos, "inside": pos == "inside"})
    return out


def gate(frame: pl.DataFrame, gcols: list[str], chosen_lr: list[Record] | None) -> dict:
    """The gate's records: `steps` (every adjacent pair of sizes), `lr` (every size), `summary`
    (one per group, split and line, with `passed`) and `passed` (all of them)."""
    ce = frame.filter(pl.col("metric").str.contains(r"^eval/[^/]+/ce$"))
    lrs = lr_records(frame, gcols, chosen_lr)
    steps: list[Record] = []
    summary: list[Record] = []
    points = aggregate_points(ce, gcols, "N", "size")
    parts = points.partition_by([*gcols, "metric"], as_dict=True, maintain_order=True)
    for values, part in parts.items():
        group = {c: plain_value(v) for c, v in zip(gcols, values, strict=False)}
        split = values[-1].split("/")[1]
        in_group = [r for r in lrs if all(r[c] == group[c] for c in gcols)]
        for at, line in lines(part, "N"):
            key = {**group, "split": split, "at": at or None}
            s, row = ce_steps(line, key)
            steps += s
            row["lr_sizes"] = len(in_group)
            row["lr_inside"] = sum(r["inside"] for r in in_group)
            row["lr_ok"] = bool(in_group) and all(r["inside"] for r in in_group)
            row["passed"] = row["ce_falls"] and row["lr_ok"]
            summary.append(row)
    return {
        "steps": steps,
        "lr": lrs,
        "summary": summary,
        "passed": bool(summary) and all(r["passed"] for r in summary),
    }


def gate_lines(found: dict, gcols: list[str]) -> list[str]:
    """The gate as plain lines (the header of the scaling output): the verdict, then per group,
    split and line the per-size CEs, the separated steps and the learning rates."""
    if not found["summary"]:
        return ["sanity gate: FAIL (no held-out CE, eval/<split>/ce, to check)"]
    out = [f"sanity gate: {'PASS' if found['passed'] else 'FAIL'}"]
    for r in found["summary"]:
        label = ", ".join(f"{c}={format_value(r[c])}" for c in gcols)
        where = " ".join(x for x in (label, r["split"], r["at"] or "") if x)
        sd = "no seed sd" if r["pooled_sd"] is None else f"2·s_pooled = {2 * r['pooled_sd']:.3g}"
        if r["sizes"] < 2:
            out.append(
                f"gate {where}: FAIL; one size (CE {r['ce_means'][0]:.3g}): nothing to scale"
            )
            continue
        out.append(
            f"gate {where}: {'pass' if r['passed'] else 'FAIL'}; CE by N "
            f"{', '.join(f'{m:.3g}' for m in r['ce_means'])}; "
            f"{r['steps_separated']}/{r['steps']} steps fall by more than {sd}; "
            f"best lr inside its grid at {r['lr_inside']}/{r['lr_sizes']} sizes"
        )
    return out
