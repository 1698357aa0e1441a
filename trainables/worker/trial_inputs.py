"""What a trial trains on: its tokenizer, its model and its encoded data splits.

Everything here is a function of the `TrialConfig` alone, so every worker of a trial (and every
trial with the same seeds) builds the same model and the same data: the model from
`config.seed_for("init")`, the data from `config.seed_for("data")`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainables.config import (
    SMOLLM2,
    DataConfig,
    ModelConfig,
    TrialConfig,
    held_out_benchmark,
)
from trainables.data import generated_cache, text_files
from trainables.data.batching import IGNORE_INDEX, encode_records
from trainables.data.benchmarks import load_benchmark
from trainables.data.instructions import load_instructions
from trainables.data.records import Record
from trainables.losses import LOSSES, NumberVocab
from trainables.models.presets import build_model
from trainables.models.pretrained import (
    load_pretrained,
    load_pretrained_tokenizer,
    load_smollm2,
    smollm2_tokenizer,
)
from trainables.models.text_tokenizer import build_text_tokenizer
from trainables.models.tokenizer import build_digit_tokenizer

# Seed of the shared from-scratch tokenizer: fixed, so all trials of a sweep share one tokenizer
# whatever their seed (the trial seed varies model init and data, not the vocabulary).
TOKENIZER_SEED = 0


def load_tokenizer(
    model: ModelConfig, cache_dir: str | Path, *, data: DataConfig | None = None, data_seed: int = 0
) -> Any:
    """The trial's tokenizer (a pretrained model's without loading its weights)."""
    return load_tokenizer_and_config(model, cache_dir, data=data, data_seed=data_seed)[0]


def load_tokenizer_and_config(
    model: ModelConfig, cache_dir: str | Path, *, data: DataConfig | None = None, data_seed: int = 0
) -> tuple[Any, Any]:
    """The trial's tokenizer and, for a pretrained model, its Hugging Face config (None for a
    preset): what the checks before a sweep need, never the weights. A preset's tokenizer is
    the digit tokenizer, or for a `text_files` corpus (`data`) a BPE trained on its training
    documents (those of `data_seed`'s split)."""
    if model.preset is not None:
        if data is not None and data.source == "text_files":
            train, _ = text_files.split_documents(text_files.read_documents(data), data, data_seed)
            tokenizer = build_text_tokenizer(
                model.vocab_size, Path(cache_dir) / "tokenizers", train
            )
            return tokenizer, None
        tokenizer = build_digit_tokenizer(
            model.vocab_size, Path(cache_dir) / "tokenizers", TOKENIZER_SEED
        )
        return tokenizer, None
    assert model.path is not None
    models = Path(cache_dir) / "models"  # where load_model_and_tokenizer converts GGUF files
    if model.path == SMOLLM2:
        return smollm2_tokenizer(models)
    return load_pretrained_tokenizer(model.path, gguf_file=model.gguf_file, cache_dir=models)


def load_model_and_tokenizer(
    model: ModelConfig,
    cache_dir: str | Path,
    *,
    seed: int,
    data: DataConfig | None = None,
    data_seed: int = 0,
) -> tuple[torch.nn.Module, Any]:
    """A fresh preset model (initialised from `seed`) or the pretrained one, and its tokenizer
    (`data`, `data_seed`: as for `load_tokenizer_and_config`)."""
    cache = Path(cache_dir)
    if model.preset is not None:
        tokenizer = load_tokenizer(model, cache, data=data, data_seed=data_seed)
        net = build_model(
            model.preset,
            len(tokenizer),
            seed,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        return net, tokenizer
    assert model.path is not None
    if model.path == SMOLLM2:
        net, tokenizer = load_smollm2(cache / "models")
    else:
        net, tokenizer = load_pretrained(
            model.path, gguf_file=model.gguf_file, cache_dir=cache / "models"
        )
    net.train()
    return net, tokenizer


def check_tokenizer_for_loss(tokenizer: Any, loss_name: str) -> NumberVocab | None:
    """The tokenizer's NumberVocab; raises ValueError (naming tokenizer and loss) when a digit
    loss meets a tokenizer without single-digit tokens. None for other losses on such tokenizers."""
    try:
        return NumberVocab.from_tokenizer(tokenizer)
    except ValueError as err:
        if LOSSES[loss_name].needs_digits:
            raise ValueError(f"loss {loss_name!r} needs single-digit tokens: {err}") from err
        return None


@dataclass
class Splits:
    """Encoded training examples and the held-out records per evaluation split / benchmark."""

    train: list[dict[str, list[int]]]
    eval_examples: dict[str, list[dict[str, list[int]]]] = field(default_factory=dict)
    """Teacher-forced evaluation: split name ("test", "extra") -> encoded examples."""
    generation: dict[str, list[Record]] = field(default_factory=dict)
    """Generation evaluation: benchmark name ("mathgen", "gsm8k", …) -> records."""


def held_out_split(
    data: DataConfig, seed: int, cache_dir: str | Path | None = None
) -> tuple[list[Record], list[Record]]:
    """(training records, held-out interpolation records): generated problems kept apart by the
    generator's hash partition (cached under `cache_dir` when given), or an instruction file's
    last `n_test` records held out."""
    if data.source == "instructions":
        if data.path is None:
            raise ValueError("data.source 'instructions' needs data.path")
        records = load_instructions(data.path)
        if len(records) <= data.n_test:
            raise ValueError(
                f"data.path {data.path}: {len(records)} records, not more than data.n_test="
                f"{data.n_test} (the last n_test are held out for evaluation)"
            )
        return records[: -data.n_test][: data.n_train], records[-data.n_test :]
    train = generated_cache.generate(
        data.modules, data.n_train, "train", seed, cache_dir, data.difficulty
    )
    test = generated_cache.generate(
        data.modules, data.n_test, "test", seed, cache_dir, data.difficulty
    )
    return train, test


def load_splits(config: TrialConfig, tokenizer: Any) -> Splits:
    """Training data, held-out teacher-forced splits (each cut to `eval.scored_tokens` scored
    tokens when given) and generation benchmarks for a trial."""
    splits = _load_splits(config, tokenizer)
    if config.eval.scored_tokens is not None:
        for name, examples in splits.eval_examples.items():
            splits.eval_examples[name] = first_scored_tokens(
                examples, config.eval.scored_tokens, name
            )
    return splits


def _text_splits(config: TrialConfig, tokenizer: Any) -> Splits:
    data = config.data
    documents = text_files.read_documents(data)
    train, test = text_files.split_documents(documents, data, config.seed_for("data"))
    splits = Splits(train=text_files.pack(tokenizer, train, data.max_length))
    if not splits.train:
        raise ValueError(
            f"data.paths: the training documents hold fewer than {data.max_length} tokens"
        )
    splits.eval_examples["test"] = text_files.pack(tokenizer, test, data.max_length)
    if not splits.eval_examples["test"]:
        raise ValueError(
            f"data.n_test={data.n_test}: the held-out documents hold fewer than "
            f"data.max_length={data.max_length} tokens"
        )
    return splits


def _load_splits(config: TrialConfig, tokenizer: Any) -> Splits:
    if config.data.source == "text_files":
        return _text_splits(config, tokenizer)
    data, seed = config.data, config.seed_for("data")
    chat = config.model.chat_template
    train, test = held_out_split(data, seed, config.cache_dir)
    splits = Splits(train=encode_records(tokenizer, train, data.max_length, chat))
    if not splits.train:
        raise ValueError("no training example fits data.max_length")
    splits.eval_examples["test"] = encode_records(tokenizer, test, data.max_length, chat)
    if config.eval.generate_examples:
        splits.generation[held_out_benchmark(data)] = test[: config.eval.generate_examples]
    if data.n_extra:
        extra = generated_cache.generate(
            data.modules, data.n_extra, "extrapolate", seed, config.cache_dir, data.difficulty
        )
        splits.eval_examples["extra"] = encode_records(tokenizer, extra, data.max_length, chat)
        if config.eval.generate_examples:
            splits.generation["mathgen_extra"] = extra[: config.eval.generate_examples]
    for name, path in data.benchmarks.items():
        records = load_benchmark(name, path)[: data.benchmark_limit]
        splits.generation[name] = records[: config.eval.generate_examples or len(records)]
    return splits


def first_scored_tokens(
    examples: list[dict[str, list[int]]], n: int, split: str
) -> list[dict[str, list[int]]]:
    """The examples that hold the first `n` scored tokens of `examples` (in order), the last one's
    later labels set to -100: exactly `n` targets are scored. A token is scored where its label
    is not -100, except at position 0 (the model's shift never predicts the first token).
    ValueError naming eval.scored_tokens when the split has fewer."""
    kept, left = [], n
    for example in examples:
        scored = [
            t for t in range(1, len(example["labels"])) if example["labels"][t] != IGNORE_INDEX
        ]
        if len(scored) >= left:
            cut = scored[left - 1] + 1
            labels = example["labels"][:cut] + [IGNORE_INDEX] * (len(example["labels"]) - cut)
            kept.append({**example, "labels": labels})
            return kept
        kept.append(example)
        left -= len(scored)
    raise ValueError(
        f"eval.scored_tokens={n}: split {split!r} scores only {n - left} tokens; lower it or "
        "hold out more data"
    )
