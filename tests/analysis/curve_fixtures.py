"""Small stores of learning curves for the curve-summary, power, plateau and paired-test tests:
every value is in `CurveStore.values`, so a test derives its expectation from those numbers
independently of the analysis code. Written through the sweep's own writer
(bench/synthetic_store.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from tests.analysis_fixtures import at

ACC, CE, ENT = "eval/test/digit_acc", "eval/test/ce", "eval/test/digit_entropy"
STEPS = (0, 100, 200, 300, 400)


@dataclass(frozen=True)
class CurveStore:
    root: Path
    experiment: str
    values: dict[tuple[str, int, str], list[float]]
    """(loss, seed, metric) -> the value at each of `steps`."""
    steps: tuple[int, ...]


Curve = Callable[[str, int, np.random.Generator], dict[str, Sequence[float]]]


def default_curves(loss: str, seed: int, rng: np.random.Generator) -> dict[str, list[float]]:
    """Accuracy rising (del a little faster, seeds spread), CE falling, entropy tracking
    accuracy; noise from `rng`."""
    base = np.array([0.1, 0.3, 0.45, 0.55, 0.6])
    lift = 0.03 if loss == "del" else 0.0
    acc = base + lift * np.arange(5) / 4 + rng.normal(0, 0.02, 5)
    ce = 2.0 - 2 * acc + rng.normal(0, 0.01, 5)
    ent = 2.5 - 1.5 * acc + (0.05 if loss == "del" else 0.0) + rng.normal(0, 0.01, 5)
    return {ACC: acc.tolist(), CE: ce.tolist(), ENT: ent.tolist()}


def write_curve_store(
    root: Path,
    losses: Sequence[str] = ("mle", "del"),
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    curves: Curve = default_curves,
    steps: Sequence[int] = STEPS,
    experiment: str = "curves",
    rng_seed: int = 7,
) -> CurveStore:
    """One TERMINATED trial per (loss, seed) with the metrics `curves` gives at `steps`."""
    rng = np.random.default_rng(rng_seed)
    rows, trials, values = [], [], {}
    for i, (loss, seed) in enumerate((lo, s) for lo in losses for s in seeds):
        trial = f"{loss}_s{seed}"
        for metric, vals in curves(loss, seed, rng).items():
            values[(loss, seed, metric)] = [float(v) for v in vals]
            rows += [
                (trial, 0, step, metric, float(v), at(10 * i + k))
                for k, (step, v) in enumerate(zip(steps, vals, strict=True))
            ]
        config = trial_config(loss=loss, seed=seed)
        trials.append(trial_row(trial, "TERMINATED", config, start=at(10 * i), ts=at(10 * i + 9)))
    write_metric_rows(root, experiment, rows)
    write_trial_states(root, experiment, trials)
    return CurveStore(root, experiment, values, tuple(steps))
