"""Which value of a trial counts (`--value`): its final value, its best value over training, its
value at a given step, or a summary of its learning curve: the mean of its last K evaluations,
the trapezoidal mean over the evaluated steps (area under the curve / steps spanned), or the
step at which it first reaches a value. `select_values` picks that value out of the metric rows;
the curve summaries are computed in analysis/curve_summaries.py.

Summaries of the whole curve shrink the seed-to-seed spread when the final step falls in the
middle of a learning jump (seeds pass it at different steps): see docs/analysis.md."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import polars as pl

from analysis.curve_summaries import summarise
from analysis.settings_flags import flag
from records.metric_names import Direction, direction

Kind = Literal["final", "best", "step", "last", "auc", "steps_to"]

VALUE_HELP = (
    "final, best, step:N, last:K (mean of the last K evaluations), auc or auc:FROM-TO "
    "(trapezoidal mean over the evaluated steps), steps_to:X (first step reaching X, "
    "interpolated)"
)


@dataclass(frozen=True)
class ValueSpec:
    """final: the value at the trial's last reported step; best: the best value over all steps
    (by the metric's direction; metrics without one have no best); step: the value at step N;
    last: the mean of the last `count` evaluations; auc: the trapezoidal mean over the evaluated
    steps in [start, end] (all when None); steps_to: the first step at which the metric reaches
    `target` in its better direction, interpolated linearly between evaluations (null when the
    trial never reaches it)."""

    kind: Kind
    step: int | None = None
    count: int | None = None
    start: int | None = None
    end: int | None = None
    target: float | None = None

    @property
    def label(self) -> str:
        if self.kind == "step":
            return f"step {self.step}"
        if self.kind == "last":
            return f"last {self.count}"
        if self.kind == "auc":
            return "auc" if self.start is None else f"auc {self.start}-{self.end}"
        if self.kind == "steps_to":
            return f"steps to {self.target:g}"
        return self.kind

    @property
    def text(self) -> str:
        """The spec as `parse_value` reads it (`--value step:400`)."""
        if self.kind == "step":
            return f"step:{self.step}"
        if self.kind == "last":
            return f"last:{self.count}"
        if self.kind == "auc" and self.start is not None:
            return f"auc:{self.start}-{self.end}"
        if self.kind == "steps_to":
            return f"steps_to:{self.target!r}"
        return self.kind

    @property
    def needs_direction(self) -> bool:
        """best and steps_to are defined only for metrics with a better direction."""
        return self.kind in ("best", "steps_to")


FINAL = ValueSpec("final")
BEST = ValueSpec("best")


def summary_direction(spec: ValueSpec, metric: str) -> Direction | None:
    """Which way the summary is better: fewer steps for steps_to, else the metric's direction."""
    return "min" if spec.kind == "steps_to" else direction(metric)


def _bad(text: str, why: str = "") -> ValueError:
    return ValueError(f"--value must be one of {VALUE_HELP}; got {text!r}{why}")


def _parse_auc(text: str, rest: str) -> ValueSpec:
    lo, sep, hi = rest.partition("-")
    if not sep or not lo.isdigit() or not hi.isdigit():
        raise _bad(text, " (auc:FROM-TO takes two steps, e.g. auc:400-2000)")
    if int(lo) >= int(hi):
        raise _bad(text, " (FROM must be below TO)")
    return ValueSpec("auc", start=int(lo), end=int(hi))


def parse_value(text: str) -> ValueSpec:
    """Parse `final`, `best`, `step:N`, `last:K`, `auc`, `auc:FROM-TO` or `steps_to:X`."""
    text = text.strip()
    if text in ("final", "best", "auc"):
        return ValueSpec(text)  # type: ignore[arg-type]
    kind, sep, rest = text.partition(":")
    if not sep:
        raise _bad(text)
    if kind == "step" and rest.isdigit():
        return ValueSpec("step", int(rest))
    if kind == "last" and rest.isdigit() and int(rest) >= 1:
        return ValueSpec("last", count=int(rest))
    if kind == "auc":
        return _parse_auc(text, rest)
    if kind == "steps_to":
        try:
            target = float(rest)
        except ValueError:
            raise _bad(text, " (steps_to:X takes a number)") from None
        if not math.isfinite(target):
            raise _bad(text, " (X must be finite)")
        return ValueSpec("steps_to", target=target)
    raise _bad(text)


def parse_values(texts: Iterable[str]) -> list[ValueSpec]:
    """Parse several value specs, also comma-separated ("final,best"), keeping order, no repeats."""
    specs: list[ValueSpec] = []
    for text in texts:
        for part in text.split(","):
            spec = parse_value(part)
            if spec not in specs:
                specs.append(spec)
    return specs


def _spec_text(spec: ValueSpec) -> str:
    return spec.text


VALUE_FLAG = flag(parse=parse_value, text=_spec_text)
"""`--value final`: one value kind per trial."""
VALUES_FLAG = flag("--value", parse=parse_values, text=_spec_text)
"""`--value final,best`: several value kinds, a column each (the settings freeze the list)."""


def select_values(latest: pl.DataFrame | pl.LazyFrame, spec: ValueSpec) -> pl.DataFrame:
    """One value per (experiment, trial_id, metric) from deduplicated rows (`latest_rows`).

    Returns columns experiment, trial_id, metric, value, step (the step the value was taken at;
    for curve summaries the last step they cover, for steps_to the first evaluation at or past
    the crossing). Non-finite values never count as best. Metrics without a direction get no
    `best` or `steps_to` row. A steps_to row whose trial never reaches the target has a null
    value (`not_reached` counts them).
    """
    lf = latest.lazy()
    keys = ["experiment", "trial_id", "metric"]
    if spec.kind in ("last", "auc", "steps_to"):
        return summarise(
            lf, spec.kind, count=spec.count, start=spec.start, end=spec.end, target=spec.target
        )
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


def missing_values_note(latest: pl.DataFrame, picked: pl.DataFrame, spec: ValueSpec) -> str | None:
    """A sentence on trials that have a metric but no value of this kind for it (a step they did
    not report, fewer than K evaluations, no evaluation in the auc range, a steps_to target never
    reached), or None. Kinds final/best/step keep their own notes (ablation)."""
    if spec.kind not in ("last", "auc", "steps_to"):
        return None
    keys = ["experiment", "trial_id", "metric"]
    have = latest.select(keys).unique()
    if spec.kind == "steps_to":
        # undirected metrics have no steps_to at all (the caller says so)
        have = have.filter(pl.col("metric").is_in(picked["metric"].unique().to_list()))
    missing = have.join(picked.filter(pl.col("value").is_not_null()), on=keys, how="anti")
    if missing.height == 0:
        return None
    per_metric = missing.group_by("metric").len().sort("metric")
    listed = ", ".join(f"{m} ({n})" for m, n in per_metric.iter_rows())
    # Only the message of this kind is built: another kind's fields (target, count) may be None.
    if spec.kind == "last":
        why = f"fewer than {spec.count} evaluations"
    elif spec.kind == "auc":
        why = "no evaluation in the step range"
    else:
        why = f"never reached {spec.target:g} (censored: left out of means and tests)"
    return f"{spec.label}: {missing.height} trial value(s) missing, {why}: {listed}"
