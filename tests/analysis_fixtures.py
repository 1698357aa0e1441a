"""Hand-written results stores for the analysis tests: every value is spelled out here, so the
expected tables in the tests can be derived from these numbers by arithmetic. They are written
through the sweep's own writer (bench/synthetic_store.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row

T0 = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def holm_by_definition(p: list[float]) -> list[float]:
    """Holm's adjusted p-values as Holm (1979) defines them, the tests' independent reference:
    the i-th smallest becomes max over j ≤ i of (m − j + 1)·p(j), capped at 1."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, (len(p) - rank) * p[i])
        out[i] = min(1.0, running)
    return out


# The 3-trial golden store: two mle seeds and one del seed, split "test", steps 0/100/200.
# Final and best values per trial (after deduplication), which the tests do arithmetic on:
#   trial    digit_acc (0,100,200)   ce (0,100,200)     digit_entropy (0,100,200)  gen/macc (200)
#   mle_s0   0.10 0.50 0.60          2.00 1.20 1.00     2.3 1.0 0.9               0.40
#   mle_s1   0.12 0.70 0.64          2.10 0.70 1.05     2.3 1.1 0.8               0.50
#   del_s0   0.11 0.55 0.75          2.05 1.30 0.90     2.3 0.7 0.5               0.45
GOLDEN = {
    "mle_s0": {
        "eval/test/digit_acc": (0.10, 0.50, 0.60),
        "eval/test/ce": (2.00, 1.20, 1.00),
        "eval/test/digit_entropy": (2.3, 1.0, 0.9),
    },
    "mle_s1": {
        "eval/test/digit_acc": (0.12, 0.70, 0.64),
        "eval/test/ce": (2.10, 0.70, 1.05),
        "eval/test/digit_entropy": (2.3, 1.1, 0.8),
    },
    "del_s0": {
        "eval/test/digit_acc": (0.11, 0.55, 0.75),
        "eval/test/ce": (2.05, 1.30, 0.90),
        "eval/test/digit_entropy": (2.3, 0.7, 0.5),
    },
}
GOLDEN_MACC = {"mle_s0": 0.40, "mle_s1": 0.50, "del_s0": 0.45}
STEPS = (0, 100, 200)


def write_golden_store(root: Path, experiment: str = "golden") -> Path:
    """The 3-trial store above, plus the rows deduplication must discard:
    - mle_s0 digit_acc at step 200 first written as 0.58, re-written as 0.60 later (restored);
    - del_s0 digit_acc at step 200 reported 0.20 by attempt 0 with a *later* timestamp than
      attempt 1's 0.75: the highest attempt wins whatever the clock says;
    - del_s0 ce at step 200 reported 1.40 by attempt 0, then 0.90 by attempt 1 (a retry).
    Trial states come in two parts, as the sink writes them: RUNNING rows, then TERMINATED rows
    with `end`.
    Metric rows are spread over two part files.
    """
    rows = []
    for k, (trial, metrics) in enumerate(GOLDEN.items()):
        for metric, values in metrics.items():
            for step, value in zip(STEPS, values, strict=True):
                attempt = 1 if trial == "del_s0" and step == 200 else 0
                rows.append((trial, attempt, step, metric, value, at(100 * k + step)))
        rows.append((trial, 0, 200, "gen/macc", GOLDEN_MACC[trial], at(100 * k + 201)))
        rows.append((trial, 0, 0, "model/params_non_embedding", 1e6, at(100 * k)))
    superseded = [
        ("mle_s0", 0, 200, "eval/test/digit_acc", 0.58, at(150)),  # before the 0.60 row
        ("del_s0", 0, 200, "eval/test/digit_acc", 0.20, at(9999)),  # lower attempt, later ts
        ("del_s0", 0, 200, "eval/test/ce", 1.40, at(150)),
    ]
    write_metric_rows(root, experiment, rows[:20])
    write_metric_rows(root, experiment, rows[20:] + superseded)
    configs = {
        "mle_s0": {"loss": "mle", "seed": 0},
        "mle_s1": {"loss": "mle", "seed": 1},
        "del_s0": {"loss": "del", "params": {"alpha": 0.5}, "seed": 0},
    }
    first, final = [], []
    for k, (trial, cfg) in enumerate(configs.items()):
        config = trial_config(**cfg, lr=1e-3, model="tiny", dataset="mathgen")
        first.append(trial_row(trial, "RUNNING", config, start=at(100 * k), ts=at(100 * k)))
        final.append(
            trial_row(
                trial,
                "TERMINATED",
                config,
                start=at(100 * k),
                end=at(100 * k + 300),
                ts=at(100 * k + 300),
            )
        )
    write_trial_states(root, experiment, first)
    write_trial_states(root, experiment, final)
    return root


def write_power_law_store(
    root: Path,
    sizes: tuple[float, ...] = (1e6, 1e7, 1e8),
    experiment: str = "scaling",
    total: Callable[[float], float] = lambda n: n + 5e6,
) -> Path:
    """One mle trial per size with exact power laws at the final step (200):
    ce = 3·N^−0.1, error_entropy = 0.6·ce = 1.8·N^−0.1; step 100 has twice those values. N is
    the non-embedding count; the total count is `total(N)` (5e6 embedding parameters)."""
    rows, trials = [], []
    for k, n in enumerate(sizes):
        trial = f"size{k}"
        ce = 3.0 * n**-0.1
        rows += [
            (trial, 0, 0, "model/params_non_embedding", n, at(k)),
            (trial, 0, 0, "model/params_total", total(n), at(k)),
            (trial, 0, 100, "eval/test/ce", 2 * ce, at(k + 1)),
            (trial, 0, 100, "eval/test/error_entropy", 2 * 0.6 * ce, at(k + 1)),
            (trial, 0, 200, "eval/test/ce", ce, at(k + 2)),
            (trial, 0, 200, "eval/test/error_entropy", 0.6 * ce, at(k + 2)),
        ]
        config = trial_config(loss="mle", seed=0, lr=1e-3, model=f"m{k}", dataset="mathgen")
        trials.append(trial_row(trial, "TERMINATED", config, start=at(k), ts=at(k + 3)))
    write_metric_rows(root, experiment, rows)
    write_trial_states(root, experiment, trials)
    return root
