"""Which metrics a sweep reports, and the metric names a sweep file gives (search objectives,
early stopping) checked against them before anything starts.

The names come from the metric registry (`records.metric_names`); what this sweep's
evaluation produces comes from its base trial (`trainables.worker.trial_inputs.evaluation_names`)
and the parts its losses return. A name no trial can report is an error: a typo (with the closest
names), or a metric this configuration never produces (with the reason), since Optuna and ASHA
would otherwise wait for a value that never comes.

A sweep is given as its base trial and its losses (`SweepConfig.trial`, `SweepConfig.losses`):
the sweep schema calls these checks, so this module never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from records import metric_names as registry
from trainables.config import TrialConfig, evaluation_names, held_out_benchmark
from trainables.losses import LOSSES


def loss_parts(losses: Sequence[str]) -> list[str]:
    """The parts the losses return (their `parts`), without repeats, in order."""
    return list(dict.fromkeys(part for loss in losses for part in LOSSES[loss].parts))


def reported_metrics(trial: TrialConfig, losses: Sequence[str], digits: bool = True) -> list[str]:
    """Every metric name a trial of a sweep with base trial `trial` and `losses` reports (digit
    places expanded); `digits`: the tokenizer has single-digit tokens, so the digit metrics
    exist."""
    splits, benchmarks = evaluation_names(trial)
    return registry.expand(splits, benchmarks, loss_parts(losses), digits)


def _why_not(trial: TrialConfig, losses: Sequence[str], name: str, digits: bool) -> str:
    """Why a registered metric is absent from this sweep's reports."""
    family = registry.family(name)
    assert family is not None
    values = family.match(name) or {}
    data, generate = trial.data, trial.eval.generate_examples
    splits, benchmarks = evaluation_names(trial)
    leaf = family.pattern.rsplit("/", 1)[-1]
    if "split" in values and values["split"] not in splits:
        if values["split"] == "extra":
            return "data.n_extra is 0 (no extrapolation split)"
        return f"the teacher-forced splits are {', '.join(splits)}"
    if not digits and leaf.startswith("digit_"):
        return "the tokenizer has no single-digit tokens, so there are no digit metrics"
    benchmark = values.get("benchmark")
    if data.source == "text_files" and (benchmark is not None or name == registry.MACC):
        return "data.source 'text_files' has no generation evaluation (no answers to generate)"
    if benchmark is not None and benchmark not in benchmarks:
        generated = ("mathgen", "held_out", "mathgen_extra")
        if benchmark in generated and not generate:
            return "eval.generate_examples is 0 (no generation of held-out problems)"
        if benchmark == "mathgen_extra":
            return "data.n_extra is 0 (no extrapolation split)"
        if benchmark in generated:
            held_out = held_out_benchmark(data)
            return f"data.source {data.source!r} reports its held-out problems as gen/{held_out}/…"
        return f"no benchmark {benchmark!r} in data.benchmarks"
    if name == registry.MACC:
        return "no generation benchmark (eval.generate_examples is 0, data.benchmarks is empty)"
    if "place" in values:
        top = registry.MAX_PLACE
        return f"digit places run 0 .. {top - 1} (integer places), 1 .. {top} (decimal places)"
    if "part" in values:
        parts = loss_parts(losses)
        return (
            f"no loss of this sweep returns the part {values['part']!r} (parts: {', '.join(parts)})"
        )
    return "this sweep's evaluation does not produce it"


def check_metric(
    trial: TrialConfig, losses: Sequence[str], key: str, name: str, digits: bool = True
) -> None:
    """ValueError naming `key` when no trial of the sweep (`trial`, `losses`) reports the metric
    `name`."""
    reported = reported_metrics(trial, losses, digits)
    if name in reported:
        return
    if registry.family(name) is None:
        close = registry.close_matches(name, reported)
        hint = (
            f"; did you mean {', '.join(close)}?"
            if close
            else ("; metrics are " + ", ".join(f.pattern for f in registry.FAMILIES))
        )
        raise ValueError(f"{key}: unknown metric {name!r}{hint}")
    raise ValueError(
        f"{key}: {name!r} is never reported by this sweep: {_why_not(trial, losses, name, digits)}"
    )


def check_metrics(
    trial: TrialConfig,
    losses: Sequence[str],
    named: Iterable[tuple[str, str]],
    digits: bool = True,
) -> None:
    """Check every (key, metric name) the sweep file gives (`SweepConfig.named_metrics`: the
    search objectives and the early-stopping metric)."""
    for key, name in named:
        check_metric(trial, losses, key, name, digits)
