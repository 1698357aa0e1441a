"""A trend study's pilot end to end on three small presets, as a user runs it (the real CLI,
Ray, Tune, DeepSpeed, Parquet): `numsweep study run --pilot-only` trains mle and del at
`h16l1`, `h32l1` and `tiny` (each its own rate) on two seeds, 4 steps a trial (12 trials), and
prints the seeds' slopes per decade of N and the design they size. The slopes are computed again
here from the store with numpy's polyfit on each trial's own reported parameter count."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from records.reader import load_trials, open_store, read_latest
from tests.sweep_runs import numsweep

SIZES = {"h16l1": 3e-2, "h32l1": 1e-2, "tiny": 1e-2}
STUDY = {
    "question": "Does DEL's held-out CE gap against MLE change with size on three tiny presets?",
    "sweep": {
        "experiment": "trend-study",
        "mode": "grid",
        "seed": 3,
        "trial": {
            "model": {"preset": "tiny", "vocab_size": 512},
            "data": {"modules": ["arithmetic__add_or_sub"], "n_train": 64, "n_test": 16,
                     "max_length": 64},
            "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
            "eval": {"every": 4, "batch_size": 16, "generate_examples": 0},
        },
        "grid": {"losses": ["mle", "del"], "presets": list(SIZES),
                 "lrs": {p: [lr] for p, lr in SIZES.items()}},
        "resources": {"workers_per_trial": 1, "cpus_per_worker": 1},
    },
    "reference": "mle",
    "primary": {"metric": "eval/test/ce", "summary": "final", "trend": "log_n"},
    "sesoi": 0.01,
    "pilot": {"seeds": [100, 101]},
    "design": {"max_seeds": 4, "looks": 1, "spending": "none", "futility": False},
    "budget_hours": 10.0,
}  # fmt: skip


def _slopes(results: Path) -> list[float]:
    """del − mle's final CE per seed regressed on log10 of the trials' reported N."""
    store = open_store(results, ["trend-study-pilot"])
    latest, _ = read_latest(store, ["eval/test/ce", "model/params_non_embedding"])
    final = latest.sort("step").group_by("trial_id", "metric").agg(pl.col("value").last())
    wide = final.pivot(on="metric", index="trial_id", values="value").join(
        load_trials(store).select("trial_id", "loss", "seed"), on="trial_id"
    )
    out = []
    for seed in (100, 101):
        one = wide.filter(pl.col("seed") == seed).sort("model/params_non_embedding")
        arms = {loss: one.filter(pl.col("loss") == loss) for loss in ("del", "mle")}
        x = np.log10(arms["mle"]["model/params_non_embedding"].to_numpy())
        assert len(x) == 3 and np.all(np.diff(x) > 0)
        out.append(np.polyfit(x, (arms["del"]["eval/test/ce"] - arms["mle"]["eval/test/ce"]), 1)[0])
    return out


@pytest.mark.slow
def test_a_trend_pilot_prints_the_seeds_slopes_per_decade(tmp_path):
    study = tmp_path / "study.yaml"
    study.write_text(yaml.safe_dump(STUDY))
    results = tmp_path / "results"
    run = numsweep("study", "run", study, "--results", results, "--pilot-only")
    assert run.returncode == 0, run.stdout + run.stderr
    line = re.search(
        r"del − mle \(slope per decade of N\): mean (\S+), sd (\S+) \(2 pairs\)", run.stdout
    )
    assert line, run.stdout
    slopes = _slopes(results)  # printed to 3 significant digits: within 0.5%
    assert float(line[1]) == pytest.approx(np.mean(slopes), rel=5e-3, abs=1e-9)
    assert float(line[2]) == pytest.approx(np.std(slopes, ddof=1), rel=5e-3, abs=1e-9)
    assert "would register: looks at 4 paired seeds" in run.stdout
    assert not (results / "study" / "trend-study" / "registration.json").exists()
