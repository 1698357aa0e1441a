"""Checks that run before anything is launched: the model's tokenizer against every loss of the
sweep, and the data sources. A failure here is the user's input, reported with exit code 2."""

from __future__ import annotations

from orchestrator.sweep_file import SweepConfig
from trainables.data import mathgen
from trainables.data.benchmarks import load_benchmark
from trainables.trial_inputs import check_tokenizer_for_loss, load_tokenizer


def sweep_losses(sweep: SweepConfig) -> list[str]:
    return list(sweep.search.losses if sweep.mode == "search" else sweep.grid.losses)


def preflight(sweep: SweepConfig) -> dict[str, str]:
    """Validate model, tokenizer and data for `sweep`; return a short description of each.

    Raises ValueError (or FileNotFoundError) naming what is wrong."""
    trial = sweep.trial
    tokenizer = load_tokenizer(trial.model, trial.cache_dir)
    for loss in sweep_losses(sweep):
        check_tokenizer_for_loss(tokenizer, loss)
    data = trial.data
    if data.source == "mathgen":
        # One problem per module proves every module name is valid and the generator runs.
        mathgen.generate(data.modules, len(data.modules), "train", sweep.seed)
        if data.n_extra:
            mathgen.generate(data.modules, 1, "extrapolate", sweep.seed)
    for name, path in data.benchmarks.items():
        load_benchmark(name, path)
    model = trial.model.preset or trial.model.path
    return {
        "model": str(model),
        "tokenizer": f"{type(tokenizer).__name__} ({len(tokenizer)} tokens)",
        "data": data.source if data.source == "mathgen" else str(data.path),
    }
