"""Study 2's tables and figures, from its results store alone (`make study-scaling-report`):

    python studies/scaling_cpu/tables.py RESULTS OUT

Every number in the study's README comes from one of these `python -m analysis` commands, each
written to OUT as Markdown (`<name>.md`) and JSON (`<name>.json`, full precision); OUT/index.txt
lists them. S1-S3 and the extrapolation check read `scaling`; S4 is one `ablation --block model`
family; `budget` lists every trial's tokens seen and training FLOPs (6·N·D).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import polars as pl

from analysis.__main__ import run as analysis_run
from analysis.__main__ import save
from analysis.store import current_trials, open_store, read_latest
from analysis.table import Result, Table, render

EXPERIMENT = "scaling-cpu"
DECOMPOSITION = ("ce", "error_entropy", "self_alignment", "log_confidence")


def run(out: Path, name: str, args: list[str], index: list[str]) -> None:
    """One analysis command, saved as OUT/<name>.md and OUT/<name>.json."""
    save(args, out / name)
    index.append(f"{name}: python -m analysis {shlex.join(args)}")


def budget(root: str) -> Result:
    """Per trial: N, the tokens seen at the end (D) and 6·N·D."""
    store = open_store(root, [EXPERIMENT])
    trials, notes = current_trials(store)
    names = ["model/params_non_embedding", "train/tokens_seen"]
    latest, _ = read_latest(store, names)
    missing = [n for n in names if n not in set(latest["metric"])]
    if missing:
        raise SystemExit(f"{root}: no {', '.join(missing)} in {EXPERIMENT}: no budget table")
    final = (
        latest.sort("step")
        .group_by("trial_id", "metric")
        .agg(pl.col("value").last())
        .pivot(on="metric", index="trial_id", values="value")
        .join(trials.select("trial_id", "loss", "model", "seed"), on="trial_id")
        .with_columns(
            (6 * pl.col(names[0]) * pl.col(names[1])).alias("flops"),
        )
        .sort(names[0], "loss", "seed")
    )
    rows = [
        [
            r["model"],
            r["loss"],
            str(r["seed"]),
            f"{r[names[0]]:,.0f}",
            f"{r[names[1]]:,.0f}",
            f"{r['flops']:.3g}",
        ]
        for r in final.iter_rows(named=True)
    ]
    table = Table(
        name="budget",
        title="tokens seen (D, non-padding input tokens) and training FLOPs ≈ 6·N·D per trial",
        columns=["model", "loss", "seed", "N (non-embedding)", "D", "6·N·D"],
        rows=rows,
        data=final,
    )
    result = Result("budget", "Budget per trial", notes=notes)
    result.tables.append(table)
    return result


def main(root: str, out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index: list[str] = []
    metrics = ",".join(f"eval/{s}/{m}" for s in ("test", "extra") for m in DECOMPOSITION)
    scaling = ["scaling", root, "--experiment", EXPERIMENT, "--metrics", metrics]
    run(out, "scaling", [*scaling, "--bootstrap", "2000", "--seed", "0"], index)
    s4 = ["ablation", root, "--experiment", EXPERIMENT, "--block", "model"]
    s4 += ["--metrics", "eval/test/log_confidence,eval/test/error_entropy", "--family", "all"]
    run(out, "S4", s4, index)
    s4_extra = [*s4[:-4], "--metrics", "eval/extra/log_confidence,eval/extra/error_entropy"]
    run(out, "S4_extra", [*s4_extra, "--family", "all"], index)
    run(
        out, "per_size", ["ablation", root, "--experiment", EXPERIMENT, "--metrics", metrics], index
    )
    for fmt in ("md", "json"):
        (out / f"budget.{fmt}").write_text(render(budget(root), fmt))
    index.append("budget: studies/scaling_cpu/tables.py (tokens seen and 6·N·D per trial)")
    analysis_run(["report", root, "--experiment", EXPERIMENT, "-o", str(out / "report")])
    index.append(f"report/index.html: python -m analysis report {root} --experiment {EXPERIMENT}")
    (out / "index.txt").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
