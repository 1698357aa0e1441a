"""Held-out evaluation inside a (data-parallel) training run.

Teacher-forced: the CE decomposition and the digit metrics over an evaluation split, each rank
scoring its own shard and the accumulators summed across ranks. Generation: greedy decoding of
held-out problems with the KV cache, sharded across ranks and gathered, then exact match, MAE,
relative error and per-place digit accuracy of the parsed numbers. Every rank returns the same
numbers, so any rank may report them, but for the seconds the evaluation and its generation took
(`perf/eval_s`, `perf/generate_s`), which are each rank's own. `evaluate` is what the worker
calls at a report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist

from records import metric_names as names
from trainables.config import TrialConfig
from trainables.data.batching import collate, encode_prompts
from trainables.data.benchmarks import BENCHMARKS, is_correct
from trainables.data.records import Record
from trainables.losses import NumberVocab
from trainables.metrics import CEDecomposition, DigitMetrics, PlaceAccuracy, score_numbers
from trainables.worker.trial_inputs import Splits

PROMPT_LENGTH_FACTOR = 4
"""A generation prompt may hold this many times `data.max_length` tokens (a benchmark's word
problem is longer than the training examples that length was chosen for)."""


def _shard(items: Sequence[Any], rank: int, world_size: int, filler: Any) -> tuple[list[Any], int]:
    """This rank's items (rank, rank + W, …), padded with `filler` to the same length on every
    rank: under ZeRO-3 every forward is a collective, so all ranks must run as many batches.
    Returns (items, how many are real)."""
    mine = list(items[rank::world_size])
    longest = -(-len(items) // world_size)
    return mine + [filler] * (longest - len(mine)), len(mine)


@torch.no_grad()
def teacher_forced(
    model: torch.nn.Module,
    examples: Sequence[dict[str, list[int]]],
    *,
    vocab: NumberVocab | None,
    pad_id: int,
    batch_size: int,
    device: torch.device,
    rank: int,
    world_size: int,
) -> dict[str, float]:
    """CE, error entropy, self-alignment, log confidence, the number of scored tokens and (with a
    vocab) the digit metrics of `model` on `examples`; all ranks must call it (the sums are
    all-reduced)."""
    decomposition = CEDecomposition()
    digits = DigitMetrics(vocab) if vocab is not None else None
    # Padding examples score nothing: every label is ignored.
    filler = {"input_ids": examples[0]["input_ids"], "labels": [-100] * len(examples[0]["labels"])}
    shard, _ = _shard(examples, rank, world_size, filler)
    was_training = model.training
    model.eval()
    for start in range(0, len(shard), batch_size):
        batch = {
            k: v.to(device) for k, v in collate(shard[start : start + batch_size], pad_id).items()
        }
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        decomposition.update(logits, batch["labels"])  # logits (B, T, V), labels (B, T)
        if digits is not None:
            digits.update(logits, batch["labels"])
    model.train(was_training)
    decomposition.all_reduce()
    computed = decomposition.compute()
    metrics = {k: v for k, v in computed.items() if k != "n_tokens"}
    metrics["scored_tokens"] = computed["n_tokens"]  # what the decomposition was computed on
    if digits is not None:
        digits.all_reduce()
        metrics.update({k: v for k, v in digits.compute().items() if k != "n_digits"})
    return metrics


def _gather_texts(texts: list[str], world_size: int) -> list[list[str]]:
    if world_size == 1 or not dist.is_initialized():
        return [texts]
    gathered: list[list[str] | None] = [None] * world_size
    dist.all_gather_object(gathered, texts)
    return [g or [] for g in gathered]


@torch.no_grad()
def generate_answers(
    model: Any,
    tokenizer: Any,
    records: Sequence[Record],
    *,
    batch_size: int,
    max_new_tokens: int,
    max_prompt_length: int,
    chat_template: bool,
    device: torch.device,
    rank: int,
    world_size: int,
    synced: bool = False,
) -> list[str]:
    """Greedy completions of every record, in record order, on every rank. `synced` keeps all
    ranks decoding until the last one finishes (needed when the weights are ZeRO-3 shards)."""
    shard, n_real = _shard(records, rank, world_size, records[0])
    texts: list[str] = []
    was_training = model.training
    model.eval()
    for start in range(0, len(shard), batch_size):
        chunk = shard[start : start + batch_size]
        batch = encode_prompts(tokenizer, chunk, max_prompt_length, chat_template=chat_template)
        input_ids = batch["input_ids"].to(device)  # (B, P) left-padded
        output = model.generate(
            input_ids=input_ids,
            attention_mask=batch["attention_mask"].to(device),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            use_cache=True,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            synced_gpus=synced,
        )  # (B, P + new)
        texts.extend(
            tokenizer.batch_decode(output[:, input_ids.shape[1] :], skip_special_tokens=True)
        )
    model.train(was_training)
    texts = texts[:n_real]
    # Rank r holds records r, r + W, r + 2W, …: interleave the shards back into record order.
    shards = _gather_texts(texts, world_size)
    ordered: list[str] = [""] * len(records)
    for r, shard_texts in enumerate(shards):
        for i, text in enumerate(shard_texts):
            ordered[r + i * world_size] = text
    return ordered


def score_generation(
    benchmark: str, records: Sequence[Record], texts: Sequence[str]
) -> dict[str, float]:
    """Exact match, MAE, relative error and per-place digit accuracy of generated answers.

    Benchmarks with their own answer rules (gsm8k, svamp, aqua, math, mmlu) use
    `trainables.data.benchmarks.is_correct` for exact match; generated problems compare the final
    number of the text with the reference numerically.
    """
    numbers = score_numbers(list(texts), [r.answer_value for r in records])
    if benchmark in BENCHMARKS:
        exact = sum(is_correct(benchmark, t, r) for t, r in zip(texts, records, strict=True))
        exact_match = exact / len(records) if records else math.nan
    else:
        exact_match = numbers["exact_match"]
    places = PlaceAccuracy()
    for text, record in zip(texts, records, strict=True):
        places.update(text, record.answer_value)  # the text is read through its final number
    metrics = {"exact_match": exact_match}
    metrics.update({k: numbers[k] for k in ("mae", "rel_error", "log_error")})
    metrics["parsed"] = numbers["parsed"]
    metrics.update(
        {k: v for k, v in places.compute().items() if k != "place_n" and not math.isnan(v)}
    )
    return metrics


@torch.compiler.set_stance("force_eager")
def evaluate(
    model: Any,
    splits: Splits,
    cfg: TrialConfig,
    *,
    tokenizer: Any,
    vocab: NumberVocab | None,
    step: int,
    final: bool,
    device: torch.device,
    rank: int,
    world_size: int,
) -> dict[str, float]:
    """The metrics of a report at `step`: teacher-forced ones on every evaluation split, and the
    generation ones where `EvalConfig.generates_at` says (the last step, `final`, and every
    `eval.generate_every`). All ranks must call it.

    Always eager: a compiled training step (`train.compile`) would otherwise recompile for every
    evaluation batch shape and every decoding step."""
    shards = {"device": device, "rank": rank, "world_size": world_size}
    began = time.perf_counter()
    metrics: dict[str, float] = {}
    for split, examples in splits.eval_examples.items():
        scores = teacher_forced(
            model,
            examples,
            vocab=vocab,
            pad_id=tokenizer.pad_token_id,
            batch_size=cfg.eval.batch_size,
            **shards,
        )
        metrics.update({names.eval_metric(split, k): v for k, v in scores.items()})
    if not splits.generation or not cfg.eval.generates_at(step, final):
        return {**metrics, names.EVAL_S: time.perf_counter() - began, names.GENERATE_S: 0.0}
    generating = time.perf_counter()
    accuracies = []
    for benchmark, records in splits.generation.items():
        texts = generate_answers(
            model,
            tokenizer,
            records,
            batch_size=cfg.eval.batch_size,
            max_new_tokens=cfg.eval.max_new_tokens,
            max_prompt_length=cfg.data.max_length * PROMPT_LENGTH_FACTOR,
            chat_template=cfg.model.chat_template,
            synced=cfg.train.zero_stage == 3,  # ZeRO-3: every forward is a collective
            **shards,
        )
        scores = score_generation(benchmark, records, texts)
        metrics.update({names.gen_metric(benchmark, k): v for k, v in scores.items()})
        accuracies.append(scores["exact_match"])
    metrics[names.MACC] = sum(accuracies) / len(accuracies)
    done = time.perf_counter()
    return {**metrics, names.EVAL_S: done - began, names.GENERATE_S: done - generating}
