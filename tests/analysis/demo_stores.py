"""Stores shaped like the demo's (`orchestrator/configs/demo.yaml`), written through the sweep's
own writer: mle, ntl_was, dist2 and del, the metrics a numsweep trial reports (held-out and
extrapolation CE and digit metrics, generation scores, `train/ce` beside `train/loss`, tokens
seen, `perf/*` costs) and the experiment's manifest.

- `seeds=(0,)`: the demo itself, a search: one trial per loss, each loss parameter sampled by
  Optuna (del at α 0.161), the manifest's objective eval/test/digit_acc (max);
- several seeds: the same four arms as a grid, each at its fixed parameters on every seed.

Values are smooth curves with a per-trial effect; what the tests compare against is stated
where they use it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from records.writer import ResultsStore

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
LOSSES = ("mle", "ntl_was", "dist2", "del")
SAMPLED = {
    "mle": {},
    "ntl_was": {"alpha": 0.0432},
    "dist2": {"alpha": 0.523},
    "del": {"alpha": 0.161, "decay_base": 1.31},
}
"""The one-seed search's sampled parameters (the demo's Optuna drew α and del's β)."""
FIXED = {"mle": {}, "ntl_was": {"alpha": 0.3}, "dist2": {"alpha": 0.1}, "del": {"alpha": 0.01}}
"""The grid's parameters at several seeds."""
FINAL_ACC = {"mle": 0.345, "ntl_was": 0.321, "dist2": 0.333, "del": 0.352}
"""Held-out digit accuracy at the last step, before the seed effect (del best, mle second)."""
FINAL_MACC = {"mle": 0.42, "ntl_was": 0.47, "dist2": 0.40, "del": 0.38}
"""gen/macc at the last step: ntl_was best, so ranking by it disagrees with the objective."""
TOKENS_PER_STEP = 610.0
WALL_S, CPU_PER_WALL, STARTUP_S = 95.0, 0.93, 17.5


def _manifest(seeds: Sequence[int]) -> dict:
    """The resolved sweep the demo's manifest holds (the keys the analysis reads)."""
    objectives = [{"metric": "eval/test/digit_acc", "mode": "max"}]
    search = {"losses": list(LOSSES), "objectives": objectives, "space": {}, "num_trials": 4}
    if len(seeds) == 1:
        space = {"alpha": {"low": 0.01, "high": 1.0, "log": True}}
        search["space"] = {**space, "decay_base": {"low": 1.0, "high": 1.5, "log": False}}
        return {"experiment": "demo", "mode": "search", "search": search, "grid": None}
    grid = {"losses": list(LOSSES), "seeds": list(seeds), "params": FIXED}
    return {"experiment": "demo", "mode": "grid", "search": search, "grid": grid}


def _curves(
    loss: str, seed: int, rng: np.random.Generator, steps: int, every: int, len_seeds: int
) -> list[tuple[int, str, float]]:
    """(step, metric, value) rows of one trial."""
    effect = float(np.exp(rng.normal(0.0, 0.03)))
    rows: list[tuple[int, str, float]] = []
    evals = np.arange(0, steps + 1, every)
    progress = 1.0 - np.exp(-evals / (0.3 * steps))
    # The seed moves the final accuracy by ~0.0003 at one seed: the arms' order stays FINAL_ACC's.
    final_acc = FINAL_ACC[loss] + (0.01 if len_seeds == 1 else 0.3) * (effect - 1)
    acc = 0.19 + (final_acc - 0.19) * progress / progress[-1]
    ce = 1.54 + 2.0 * np.exp(-evals / (0.2 * steps)) + 0.02 * (effect - 1)
    for k, step in enumerate(evals):
        s = int(step)
        rows += [
            (s, "eval/test/digit_acc", float(acc[k])),
            (s, "eval/test/ce", float(ce[k])),
            (s, "eval/test/digit_entropy", float(2.3 - 0.6 * progress[k])),
            (s, "eval/test/error_entropy", float(ce[k] + 0.35)),
            (s, "eval/extra/digit_acc", float(acc[k] * 0.8)),
            (s, "eval/extra/ce", float(ce[k] * 1.2)),
            (s, "eval/extra/digit_entropy", float(2.3 - 0.5 * progress[k])),
            (s, "gen/mathgen/exact_match", float(0.1 * progress[k] * effect)),
            (s, "gen/mathgen/log_error", float(3.6 - 0.2 * progress[k])),
            (s, "gen/macc", float(FINAL_MACC[loss] * progress[k] / progress[-1])),
        ]
    aux = 0.0 if loss == "mle" else 0.4  # each loss's own term: train/loss is not comparable
    for step in range(every // 5, steps + 1, every // 5):
        train_ce = float(1.5 + 2.2 * np.exp(-step / (0.2 * steps)) * effect)
        rows += [
            (step, "train/ce", train_ce),
            (step, "train/loss", train_ce + aux),
            (step, "train/tokens_seen", step * TOKENS_PER_STEP * (1 + 0.01 * seed)),
            (step, "perf/tokens_per_s", 3900.0 * effect),
            (step, "perf/step_time_s", 0.021 * effect),
            (step, "perf/peak_mem_mb", 610.0 + 15 * LOSSES.index(loss)),
        ]
    wall = WALL_S * effect
    rows += [
        (0, "model/params_non_embedding", 50_928.0),
        (0, "train/tokens_seen", 0.0),
        (steps, "perf/wall_s", wall),
        (steps, "perf/cpu_s", wall * CPU_PER_WALL),
        (steps, "perf/gpu_s", 0.0),
        (steps, "perf/startup_s", STARTUP_S),
    ]
    return rows


def write_demo_store(
    root: Path, seeds: Sequence[int] = (0,), *, steps: int = 3000, every: int = 500
) -> Path:
    """A demo-shaped store under `root` (experiment `demo`): a search at one seed, a grid at
    several (module docstring)."""
    rng = np.random.default_rng(7)
    params = SAMPLED if len(seeds) == 1 else FIXED
    metric_rows, first, final = [], [], []
    for k, (loss, seed) in enumerate((loss, seed) for seed in seeds for loss in LOSSES):
        trial = f"demo_{k:05d}"
        start = T0 + dt.timedelta(seconds=60 * k)
        for step, metric, value in _curves(loss, seed, rng, steps, every, len(seeds)):
            metric_rows.append((trial, 0, step, metric, value, start + dt.timedelta(seconds=step)))
        config = trial_config(loss=loss, params=params[loss], seed=seed, lr=3e-3, steps=steps)
        first.append(trial_row(trial, "RUNNING", config, start=start, ts=start))
        end = start + dt.timedelta(seconds=WALL_S)
        final.append(trial_row(trial, "TERMINATED", config, start=start, end=end, ts=end))
    write_metric_rows(root, "demo", metric_rows)
    write_trial_states(root, "demo", first)
    write_trial_states(root, "demo", final)
    ResultsStore(str(root), "demo").write_manifest({"config": _manifest(seeds)})
    return root
