"""Checks that run before anything is launched: the model's tokenizer (and, for a pretrained
model, its config; never its weights) against every loss of the sweep, the objective metrics
against what that tokenizer lets the trials report (a digit loss needs single-digit tokens, which
a text corpus's BPE need not have), and the data sources. A failure here is the
user's input, reported with exit code 2."""

from __future__ import annotations

from pathlib import Path

from compat.mathgen_private import check_versions
from orchestrator.sweep.sweep_file import SweepConfig
from trainables.data import mathgen
from trainables.data.benchmarks import load_benchmark
from trainables.data.text_files import read_documents, split_documents
from trainables.worker.trial_inputs import check_tokenizer_for_loss, load_tokenizer_and_config


def preflight(sweep: SweepConfig) -> dict[str, str]:
    """Validate model, tokenizer and data for `sweep`; return a short description of each
    (`digit tokens`: yes when the tokenizer has single-digit tokens, so digit metrics exist).

    Raises ValueError (or FileNotFoundError) naming what is wrong."""
    check_presets(sweep)
    trial = sweep.trial
    seed = trial.seeds.data if trial.seeds.data is not None else first_seed(sweep)
    tokenizer, config = load_tokenizer_and_config(
        trial.model, trial.cache_dir, data=trial.data, data_seed=seed
    )
    vocabs = [check_tokenizer_for_loss(tokenizer, loss) for loss in sweep.losses]
    digits = vocabs[0] is not None  # the same tokenizer for every loss
    sweep.check_metrics(digits)
    data = trial.data
    if data.source == "mathgen" or data.n_extra:
        # The generator's library versions, here and not only where its shims are applied
        # (a process applies them once, and a cached split is read without them).
        check_versions()
    described = data.source if data.source == "mathgen" else str(data.path)
    if data.source == "text_files":
        # the files exist and more of them than are held out (the tokenizer above read them
        # already for a preset; a pretrained model's tokenizer did not)
        documents = read_documents(data)
        split_documents(documents, data, seed)
        described = f"text_files ({len(documents)} files: {', '.join(data.paths)})"
    elif data.source == "mathgen":
        # One problem per module proves every module name is valid and the generator runs.
        mathgen.generate(data.modules, len(data.modules), "train", sweep.seed, data.difficulty)
    elif data.path is None or not Path(data.path).is_file():
        raise FileNotFoundError(f"data.path: instruction file {data.path} does not exist")
    if data.n_extra:
        mathgen.generate(data.modules, 1, "extrapolate", sweep.seed, data.difficulty)
    for name, path in data.benchmarks.items():
        load_benchmark(name, path)
    model = str(trial.model.preset or trial.model.path)
    if config is not None:
        model += f" ({config.model_type}, config only: weights are loaded by the workers)"
    return {
        "model": model,
        "tokenizer": f"{type(tokenizer).__name__} ({len(tokenizer)} tokens)",
        "digit tokens": "yes" if digits else "no",
        "data": described,
    }


def check_presets(sweep: SweepConfig) -> None:
    """Every model preset the sweep would build is one numsweep has (else the trials would fail
    one by one in their workers); ValueError naming the key and the presets there are."""
    from trainables.models.presets import check_preset

    named = {"trial.model.preset": [sweep.trial.model.preset] if sweep.trial.model.preset else []}
    if sweep.mode == "grid":
        named["grid.presets"] = list(sweep.grid.presets or [])
    for key, presets in named.items():
        for preset in presets:
            try:
                check_preset(preset)
            except ValueError as err:
                raise ValueError(f"{key}: {err}") from None


def first_seed(sweep: SweepConfig) -> int:
    """The seed of the sweep's first trial (search: the sweep's seed; grid: its first seed)."""
    return sweep.seed if sweep.mode == "search" else sweep.grid.seeds[0]
