"""Which value of a trial counts: its final value, its best value over training, or its value at
a given step (`--value final|best|step:N`), and picking that value out of the metric rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from analysis.metric_registry import direction


@dataclass(frozen=True)
class ValueSpec:
    """final: the value at the trial's last reported step; best: the best value over all steps
    (by the metric's direction; metrics without one have no best); step: the value at step N."""

    kind: Literal["final", "best", "step"]
    step: int | None = None

    @property
    def label(self) -> str:
        return f"step {self.step}" if self.kind == "step" else self.kind


FINAL = ValueSpec("final")
BEST = ValueSpec("best")


def parse_value(text: str) -> ValueSpec:
    """Parse `final`, `best` or `step:N` (N a non-negative integer)."""
    text = text.strip()
    if text in ("final", "best"):
        return ValueSpec(text)  # type: ignore[arg-type]
    if text.startswith("step:"):
        rest = text.removeprefix("step:")
        if rest.isdigit():
            return ValueSpec("step", int(rest))
    raise ValueError(f"--value must be final, best or step:N (N >= 0), got {text!r}")


def parse_values(texts: Iterable[str]) -> list[ValueSpec]:
    """Parse several value specs, also comma-separated ("final,best"), keeping order, no repeats."""
    specs: list[ValueSpec] = []
    for text in texts:
        for part in text.split(","):
            spec = parse_value(part)
            if spec not in specs:
                specs.append(spec)
    return specs


def select_values(latest: pl.DataFrame | pl.LazyFrame, spec: ValueSpec) -> pl.DataFrame:
    """One value per (experiment, trial_id, metric) from deduplicated rows (`latest_rows`).

    Returns columns experiment, trial_id, metric, value, step (the step the value was taken at).
    Non-finite values never count as best. Metrics without a direction get no `best` row.
    """
    lf = latest.lazy()
    keys = ["experiment", "trial_id", "metric"]
    if spec.kind == "final":
        out = lf.group_by(keys).agg(pl.col("value").sort_by("step").last(), pl.col("step").max())
    elif spec.kind == "step":
        out = lf.filter(pl.col("step") == spec.step).select([*keys, "value", "step"])
    else:
        names = lf.select(pl.col("metric").unique()).collect()["metric"].to_list()
        sign = {m: (1.0 if direction(m) == "max" else -1.0) for m in names if direction(m)}
        score = pl.col("value") * pl.col("metric").replace_strict(
            sign, default=None, return_dtype=pl.Float64()
        )
        out = (
            lf.filter(pl.col("metric").is_in(list(sign)) & pl.col("value").is_finite())
            .with_columns(score.alias("_score"))
            .group_by(keys)
            # Ties go to the earliest step: negate step in the sort key.
            .agg(
                pl.col("value").sort_by(["_score", -pl.col("step")]).last(),
                pl.col("step").sort_by(["_score", -pl.col("step")]).last(),
            )
        )
    return out.collect()
