"""Every metric a numsweep trial reports: one registry of names and name patterns, each with its
better direction and a one-line meaning.

The worker builds its metric names here (`eval_metric`, `gen_metric`, `train_metric`, the
constants); the sweep file's objectives and early stopping are checked against it before Ray
starts (`orchestrator.sweep.objectives`); the CLI's summary, `numsweep status` and the analysis
commands read directions (`direction`) and names from it. A pattern's placeholders:

    {split}      teacher-forced evaluation split: test (held-out interpolation), extra
                 (extrapolation, with data.n_extra)
    {benchmark}  generation benchmark: mathgen / held_out (the held-out split), mathgen_extra,
                 gsm8k, svamp, aqua, math, mmlu
    {place}      a digit place: integer places 0 (units) .. MAX_PLACE − 1, decimal places
                 1 .. MAX_PLACE
    {part}       a part of the trial's loss (`LossOutput.parts`: ce, aux, demd, …)

A metric with nothing to measure (decimal-place accuracy on integers, say) is left out of a
report rather than reported as NaN. Nothing here imports torch (or polars: the worker imports
this module).

The second part says which of the names in a store the analysis commands show by default
(`HELD_OUT_LEAVES`, `DECOMPOSITION_LEAVES`, the headline leaves), which splits and benchmarks a
store has, and resolves user-given names and glob patterns (`--metric 'eval/*/ce'`).
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from records.errors import ResultsError

Direction = Literal["max", "min"]

MAX_PLACE = 8
"""Digit places with a metric of their own (`digit_acc_int_{place}`, `place_acc_dec_{place}`):
the default of `trainables.metrics` DigitMetrics and PlaceAccuracy."""

STARTUP_PHASES: tuple[str, ...] = (
    "worker_process",
    "imports",
    "model",
    "data",
    "deepspeed",
    "step0_report",
    "first_step",
)
"""The worker's start-up phases, in order (`perf/startup/<phase>_s`): its process created, its
imports done, model and loss built, data built, DeepSpeed engine ready, step 0 reported, first
training step done."""

_PLACEHOLDER = {
    "split": r"[a-z][a-z0-9_]*",
    "benchmark": r"[a-z][a-z0-9_]*",
    "place": r"[0-9]+",
    "part": r"[a-z][a-z0-9_]*",
    "phase": "|".join(STARTUP_PHASES),
}


@dataclass(frozen=True)
class MetricFamily:
    """One registered metric name or name pattern (placeholders in braces)."""

    pattern: str
    direction: Direction | None
    """Which way is better; None: no value is better than another (never ranked, no `best`)."""
    doc: str
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = re.split(r"\{(\w+)\}", self.pattern)
        source = "".join(
            re.escape(p) if i % 2 == 0 else f"(?P<{p}>{_PLACEHOLDER[p]})"
            for i, p in enumerate(parts)
        )
        object.__setattr__(self, "regex", re.compile(source))

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(re.findall(r"\{(\w+)\}", self.pattern))

    def match(self, name: str) -> dict[str, str] | None:
        """The placeholder values of `name`, or None when it is not of this family."""
        found = self.regex.fullmatch(name)
        return None if found is None else found.groupdict()


_EVAL = [
    ("ce", "min", "token cross-entropy, nats per token"),
    ("error_entropy", "min", "entropy of the rank-based error (CE = EE + SA − log C)"),
    ("self_alignment", "min", "KL between the error distribution and the model's"),
    ("log_confidence", None, "log C of the CE decomposition (noise, not a goal)"),
    ("scored_tokens", None, "tokens the CE decomposition was computed on (eval.scored_tokens)"),
    ("digit_entropy", None, "entropy of the 10-way digit distribution at digit positions"),
    ("digit_acc", "max", "share of digit positions whose most likely digit is right"),
    ("digit_acc_int", "max", "digit accuracy at integer places"),
    ("digit_acc_dec", "max", "digit accuracy at decimal places"),
    ("digit_acc_int_{place}", "max", "digit accuracy at integer place {place} (0 = units)"),
    ("digit_acc_dec_{place}", "max", "digit accuracy at decimal place {place} (1 = tenths)"),
]
_GEN = [
    ("exact_match", "max", "share of generated answers that are right"),
    ("mae", "min", "mean absolute error of the generated numbers"),
    ("rel_error", "min", "mean relative error of the generated numbers"),
    ("log_error", "min", "mean log10(1 + |error|) of the generated numbers (robust MAE)"),
    ("parsed", "max", "share of generated answers with a number in them"),
    ("place_acc_int_{place}", "max", "generated digit right at integer place {place}"),
    ("place_acc_dec_{place}", "max", "generated digit right at decimal place {place}"),
]

FAMILIES: tuple[MetricFamily, ...] = (
    *(MetricFamily(f"eval/{{split}}/{leaf}", d, doc) for leaf, d, doc in _EVAL),
    *(MetricFamily(f"gen/{{benchmark}}/{leaf}", d, doc) for leaf, d, doc in _GEN),
    MetricFamily("gen/macc", "max", "mean exact match over the generation benchmarks"),
    MetricFamily("train/loss", "min", "training loss, mean over the steps since the last report"),
    MetricFamily("train/ce", "min", "training cross-entropy (the loss's `ce` part)"),
    MetricFamily("train/lr", None, "learning rate at the report"),
    MetricFamily("train/grad_norm", None, "global gradient norm, mean since the last report"),
    MetricFamily(
        "train/tokens_seen",
        None,
        "non-padding input tokens trained on so far, all micro-batches and ranks (step 0: 0)",
    ),
    MetricFamily(
        "train/aux_grad_ratio",
        None,
        "‖∇ of the weighted auxiliary term‖ / ‖∇CE‖ over the trainable parameters, on the next "
        "update's batch at this report's weights (losses with an auxiliary term)",
    ),
    MetricFamily("train/aux_grad_cos", None, "cosine between ∇CE and ∇ of the auxiliary term"),
    MetricFamily(
        "train/aux_grad_turn_deg", None, "angle between ∇CE and ∇(CE + auxiliary term), degrees"
    ),
    MetricFamily(
        "train/aux_grad_sign_flips",
        None,
        "share of the coordinates with ∇CE ≠ 0 whose sign the auxiliary term's gradient flips",
    ),
    MetricFamily("train/{part}", None, "a part of the loss, mean since the last report"),
    MetricFamily("perf/tokens_per_s", None, "target tokens per second of training"),
    MetricFamily("perf/step_time_s", None, "seconds per optimizer step"),
    MetricFamily("perf/peak_mem_mb", None, "peak accelerator memory (CPU: peak RSS), MiB"),
    MetricFamily(
        "perf/eval_s", None, "seconds of this report's evaluation: teacher-forced and generation"
    ),
    MetricFamily("perf/generate_s", None, "seconds of this report's generation (0: none)"),
    MetricFamily(
        "perf/aux_grad_s", None, "seconds of this report's manipulation check (train/aux_grad_*)"
    ),
    MetricFamily("perf/wall_s", None, "wall seconds of the trial so far, from its launch"),
    MetricFamily("perf/cpu_s", None, "CPU seconds of the trial's worker processes so far"),
    MetricFamily("perf/gpu_s", None, "GPU seconds of the trial so far (GPUs × wall; 0 on CPU)"),
    MetricFamily(
        "perf/startup_s", None, "seconds from the trial's launches to its engines being ready"
    ),
    MetricFamily("perf/bf16", None, "1: the trial trained in bf16, 0: in fp32 (step 0)"),
    MetricFamily("perf/compiled", None, "1: the training step was torch.compiled (step 0)"),
    MetricFamily(
        "perf/startup/launched_at", None, "Unix time the trial's Tune driver launched its Train run"
    ),
    MetricFamily(
        "perf/startup/compile_s",
        None,
        "seconds of the first compiled training step: its compile (or cache load) and the step",
    ),
    MetricFamily(
        "perf/startup/{phase}_s",
        None,
        "seconds from the Train run's launch to the end of start-up phase {phase} "
        "(see STARTUP_PHASES)",
    ),
    MetricFamily("model/params_total", None, "parameters of the model (step 0)"),
    MetricFamily("model/params_non_embedding", None, "non-embedding parameters (step 0)"),
)
"""The registry, most specific first: a name belongs to the first family it matches."""

TRAIN_RESERVED: frozenset[str] = frozenset(
    f.pattern.removeprefix("train/") for f in FAMILIES if f.pattern.startswith("train/")
) - {"{part}", "ce"}
"""Names under train/ that are not loss parts; no loss may name a part so."""

MACC = "gen/macc"
TRAIN_LOSS, TRAIN_LR, TRAIN_GRAD_NORM = "train/loss", "train/lr", "train/grad_norm"
TOKENS_SEEN = "train/tokens_seen"

TOKENS_PER_S, STEP_TIME_S, PEAK_MEM_MB = "perf/tokens_per_s", "perf/step_time_s", "perf/peak_mem_mb"
PARAMS_TOTAL, PARAMS_NON_EMBEDDING = "model/params_total", "model/params_non_embedding"
BF16, COMPILED, COMPILE_S = "perf/bf16", "perf/compiled", "perf/startup/compile_s"
WALL_S, CPU_S, GPU_S, STARTUP_S = "perf/wall_s", "perf/cpu_s", "perf/gpu_s", "perf/startup_s"
EVAL_S, GENERATE_S = "perf/eval_s", "perf/generate_s"
AUX_GRAD_RATIO, AUX_GRAD_COS = "train/aux_grad_ratio", "train/aux_grad_cos"
AUX_GRAD_TURN_DEG, AUX_GRAD_SIGN_FLIPS = "train/aux_grad_turn_deg", "train/aux_grad_sign_flips"
AUX_GRAD_S = "perf/aux_grad_s"
AUX_GRADIENT_METRICS = (
    AUX_GRAD_RATIO,
    AUX_GRAD_COS,
    AUX_GRAD_TURN_DEG,
    AUX_GRAD_SIGN_FLIPS,
    AUX_GRAD_S,
)
"""The manipulation check's metrics (`trainables.worker.aux_gradient`), reported at every
evaluation of a trial whose loss has an auxiliary term (`TokenLoss.auxiliary`) and by no other."""
COST_METRICS = (WALL_S, CPU_S, GPU_S, STARTUP_S, TOKENS_SEEN)
"""What a trial cost (`trainables.worker.trial_cost`), each cumulative: its last report holds the
total."""


def family(name: str) -> MetricFamily | None:
    """The registered family of `name`, or None for a name no trial reports."""
    for candidate in FAMILIES:
        if candidate.match(name) is not None:
            return candidate
    return None


def direction(name: str) -> Direction | None:
    """ "max", "min", or None: no better direction (or not a registered metric)."""
    found = family(name)
    return None if found is None else found.direction


def _registered(name: str) -> str:
    if family(name) is None:
        raise KeyError(f"metric {name!r} is not in records.metric_names")
    return name


def eval_metric(split: str, leaf: str) -> str:
    """`eval/<split>/<leaf>` (a teacher-forced metric), checked against the registry."""
    return _registered(f"eval/{split}/{leaf}")


def gen_metric(benchmark: str, leaf: str) -> str:
    """`gen/<benchmark>/<leaf>` (a generation metric), checked against the registry."""
    return _registered(f"gen/{benchmark}/{leaf}")


def train_metric(part: str) -> str:
    """`train/<part>` for a part of the loss, checked against the registry."""
    if part in TRAIN_RESERVED:
        raise KeyError(f"a loss part may not be named {part!r}: train/{part} means something else")
    return _registered(f"train/{part}")


def _place_values(leaf: str) -> range:
    return range(1, MAX_PLACE + 1) if "_dec_" in leaf else range(MAX_PLACE)


def expand(
    splits: Iterable[str] = (),
    benchmarks: Iterable[str] = (),
    parts: Iterable[str] = (),
    digits: bool = True,
    auxiliary: bool = False,
) -> list[str]:
    """Every concrete name a trial reports whose evaluation has these `splits` and generation
    `benchmarks` and whose loss returns these `parts` (`digits`: its tokenizer has digit tokens,
    so the digit metrics exist; `auxiliary`: its loss has an auxiliary term, so the manipulation
    check's `AUX_GRADIENT_METRICS` exist), in registry order. Places run over 0 .. MAX_PLACE."""
    values = {
        "split": list(splits),
        "benchmark": list(benchmarks),
        "part": list(parts),
        "phase": list(STARTUP_PHASES),
    }
    names: list[str] = []
    for fam in FAMILIES:
        leaf = fam.pattern.rsplit("/", 1)[-1]
        if not digits and leaf.startswith("digit_"):
            continue
        if fam.pattern == MACC and not values["benchmark"]:
            continue
        if fam.pattern in AUX_GRADIENT_METRICS and not auxiliary:
            continue
        combos: list[dict[str, str]] = [{}]
        for key in fam.placeholders:
            options = [str(p) for p in _place_values(leaf)] if key == "place" else values[key]
            combos = [{**c, key: o} for c in combos for o in options]
        for combo in combos:
            name = fam.pattern.format(**combo)
            if family(name) is fam and name not in names:
                names.append(name)
    return names


def close_matches(name: str, candidates: Sequence[str], n: int = 4) -> list[str]:
    """The names among `candidates` most like `name` (difflib), best first."""
    return difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)


# ---- names in a store: the default sets the commands show, splits, benchmarks, user patterns ----

HELD_OUT_LEAVES: tuple[str, ...] = (
    "digit_acc",
    "ce",
    "error_entropy",
    "self_alignment",
    "log_confidence",
    "digit_entropy",
)
"""Teacher-forced metrics the default ablation shows per split: digit accuracy, CE and its
decomposition (ce = error_entropy + self_alignment − log_confidence), digit entropy."""

DECOMPOSITION_LEAVES: tuple[str, ...] = ("ce", "error_entropy", "self_alignment", "log_confidence")
"""The metrics scaling fits are made for."""


def splits(available: Sequence[str]) -> list[str]:
    """Evaluation splits with any `eval/<split>/...` metric; `test` first, then alphabetical."""
    found = {m.split("/")[1] for m in available if m.startswith("eval/") and m.count("/") >= 2}
    return sorted(found, key=lambda s: (s != "test", s))


def benchmarks(available: Sequence[str]) -> list[str]:
    """Generation benchmarks with a `gen/<benchmark>/exact_match` metric, alphabetical."""
    return sorted(
        m.split("/")[1]
        for m in available
        if m.startswith("gen/") and m.count("/") == 2 and m.endswith("/exact_match")
    )


def resolve(patterns: Sequence[str], available: Sequence[str]) -> list[str]:
    """Metric names matching `patterns` (exact names or globs), in pattern order, no repeats.

    A pattern that matches nothing is an error that lists what is available.
    """
    out: list[str] = []
    for pattern in patterns:
        hits = [m for m in available if fnmatch.fnmatchcase(m, pattern)]
        if not hits:
            shown = ", ".join(available[:60]) + (
                f", … ({len(available) - 60} more)" if len(available) > 60 else ""
            )
            raise ResultsError(f"unknown metric {pattern!r}; available: {shown or '(none)'}")
        out.extend(h for h in hits if h not in out)
    return out


HEADLINE_LEAVES: tuple[str, ...] = ("digit_acc", "digit_entropy", "ce", "error_entropy")
"""Teacher-forced headline metrics of every split: digit accuracy, digit entropy, CE and its
power-law part, error entropy."""
HEADLINE_GEN_LEAVES: tuple[str, ...] = ("exact_match", "log_error")
"""Headline metrics of a generation benchmark: exact match and the generated numbers' log error,
mean log10(1 + |error|), the DEL paper's log-MAE. Not the raw MAE: one runaway number (a
9-digit answer to a 3-digit problem) decides a mean of absolute errors, and did decide the demo's
(4.5e+09); `--metrics 'gen/*/mae'` still shows it."""
