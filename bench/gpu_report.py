"""The GPU check's numbers from its results store (`bench/gpu_check.sh`, part `report`): per
trial of each experiment its status, bf16 on or off, tokens/s, step time and peak memory over
the last logged interval, and each loss's step time as a ratio to `mle`'s in the same
experiment, as Markdown.

    python -m bench.gpu_report RESULTS EXPERIMENT [EXPERIMENT ...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import polars as pl

from records.metric_names import BF16, PEAK_MEM_MB, STEP_TIME_S, TOKENS_PER_S
from records.reader import trial_states
from records.writer import ResultsStore

COLUMNS = {TOKENS_PER_S: "tokens/s", STEP_TIME_S: "step s", PEAK_MEM_MB: "peak MiB", BF16: "bf16"}


def experiment_table(root: str, experiment: str) -> pl.DataFrame | None:
    """One row per trial: loss, status, the last value of each of `COLUMNS`' metrics, and the
    step-time ratio to `mle` (None where the experiment has no results)."""
    store = ResultsStore(root, experiment)
    metrics, trials = store.read_table("metrics"), store.read_table("trials")
    if metrics is None or trials is None:
        return None
    states = trial_states(pl.from_arrow(trials)).select("trial_id", "loss", "status")
    last = (
        pl.from_arrow(metrics)
        .filter(pl.col("metric").is_in(list(COLUMNS)))
        .sort("attempt", "ts")
        .group_by("trial_id", "metric")
        .agg(pl.col("value").last(), pl.col("step").max())
        .pivot(on="metric", index="trial_id", values="value")
    )
    for metric in COLUMNS:
        if metric not in last.columns:
            last = last.with_columns(pl.lit(None, dtype=pl.Float64).alias(metric))
    table = states.join(last, on="trial_id", how="left").rename(COLUMNS).sort("loss")
    mle = table.filter(pl.col("loss") == "mle")["step s"]
    base = mle[0] if len(mle) and mle[0] else None
    ratio = pl.col("step s") / base if base else pl.lit(None, dtype=pl.Float64)
    ordered = ["trial_id", "loss", "status", *COLUMNS.values()]
    return table.select(ordered).with_columns(ratio.alias("step × mle"))


def markdown(table: pl.DataFrame) -> str:
    """`table` as a Markdown table (numbers to 4 significant digits)."""

    def cell(value: object) -> str:
        return "—" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in table.iter_rows()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the results root")
    parser.add_argument("experiments", nargs="+")
    args = parser.parse_args(argv)
    for experiment in args.experiments:
        table = experiment_table(args.results, experiment)
        print(f"\n### {experiment}\n")
        print("(no results)" if table is None else markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
