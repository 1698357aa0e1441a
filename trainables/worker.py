"""The Ray Train worker loop: one DeepSpeed fine-tune of one trial, read top to bottom.

Every worker of a trial runs `train_loop_per_worker(config)` with the same plain-JSON
`TrialConfig`. It builds the model and data, wraps the model in a DeepSpeed engine, trains with
the trial's loss (token means over the *global* batch, so every loss is normalised the same way
under gradient accumulation and data parallelism), evaluates every `eval.every` steps, and
reports metrics (and checkpoints, every rank saving its own DeepSpeed shard) through
`ray.train.report`. A restarted worker group resumes from the latest checkpoint at the same step
and data position.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

if not torch.cuda.is_available():
    # DeepSpeed picks its accelerator at import time; on CPU-only hosts it must be told.
    os.environ.setdefault("DS_ACCELERATOR", "cpu")

import deepspeed
import psutil
import ray.train
import torch.distributed as dist

from analysis import metric_registry as names
from trainables.config import TrialConfig
from trainables.data.batching import collate
from trainables.data_order import micro_batch_indices
from trainables.deepspeed_config import deepspeed_config
from trainables.deepspeed_ops import announce_jit_builds, trial_ops
from trainables.entry import REPLAYED_KEY
from trainables.evaluation import generate_answers, score_generation, teacher_forced
from trainables.losses import LOSSES, build_loss, target_counts
from trainables.models.presets import count_parameters
from trainables.schedule import lr_factor
from trainables.trial_inputs import (
    check_tokenizer_for_loss,
    load_model_and_tokenizer,
    load_splits,
)

# Unix time at which this module's imports (torch, transformers, DeepSpeed, Ray Train) were done:
# the start-up timeline's "imports" mark.
IMPORTED_AT = time.time()

CHECKPOINT_TAG = "numsweep"
# A checkpoint carries the metrics of this many latest reports, all reported again on resume.
# Between the worker and the sweep driver's Parquet sink a report passes a chain of one-slot
# queues (the worker's, the Tune session's, the Tune driver's pending result), so a few reports
# whose checkpoints Ray Train has committed can still be on their way when the driver dies;
# this is well above that depth. The sink drops the steps it already has.
REPLAYED_REPORTS = 8
STOPPED_FILE = "numsweep-stopped.json"  # a checkpoint holding only this: the trial stopped


def _sum_across_ranks(values: list[float], device: torch.device) -> list[float]:
    tensor = torch.tensor(values, dtype=torch.float64, device=device)
    if dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(tensor)
    return tensor.tolist()


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _quiet_report_log() -> None:
    """Ray Train logs every report's full metrics dict at INFO (hundreds of numbers per line)
    from a logger named after its source file; keep its warnings, drop that line."""
    for name in list(logging.root.manager.loggerDict):
        if name.endswith(os.path.join("execution", "context.py")):
            logging.getLogger(name).setLevel(logging.WARNING)


def startup_metrics(marks: dict[str, float], launched_at: float | None) -> dict[str, float]:
    """The start-up timeline: `perf/startup/launched_at` (Unix time the trial's Tune driver
    launched the Train run) and `perf/startup/<phase>_s`, seconds from then to the end of each
    phase (worker process created, imports, model, data, DeepSpeed engine, step-0 report, first
    training step). Nothing without a launch time, or once reported (`marks` emptied)."""
    if launched_at is None or not marks:
        return {}
    timeline = {f"perf/startup/{phase}_s": at - launched_at for phase, at in marks.items()}
    return {"perf/startup/launched_at": launched_at, **timeline}


def train_loop_per_worker(config: dict[str, Any]) -> None:
    cfg = TrialConfig.model_validate(config)
    # The start-up timeline, reported once with the first report after training begins.
    marks = {"worker_process": psutil.Process().create_time(), "imports": IMPORTED_AT}
    _quiet_report_log()
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(cfg.seed_for("init"))

    # ---- model, tokenizer, loss, data ------------------------------------------------------
    train = cfg.train
    announce_jit_builds(
        trial_ops(cuda=device.type == "cuda", offload_optimizer=train.offload_optimizer)
    )
    # Ray Train set up the process group; DeepSpeed must wrap it before it reads any config
    # (else it sizes batches for a world of 1).
    deepspeed.init_distributed(dist_backend=dist.get_backend(), dist_init_required=False)
    ds_config = deepspeed_config(train, world_size)
    zero3 = train.zero_stage == 3
    if zero3:
        # ZeRO-3: a pretrained model's weights are partitioned as they are loaded, never whole
        # on one rank (transformers' from_pretrained follows a live HfDeepSpeedConfig). Presets
        # are small and built whole; deepspeed.initialize partitions them.
        from transformers.integrations import HfDeepSpeedConfig

        hf_ds_config = HfDeepSpeedConfig(ds_config)  # noqa: F841  (must stay alive)
    model, tokenizer = load_model_and_tokenizer(
        cfg.model,
        cfg.cache_dir,
        seed=cfg.seed_for("init"),
        data=cfg.data,
        data_seed=cfg.seed_for("data"),
    )
    vocab = check_tokenizer_for_loss(tokenizer, cfg.loss.name)
    # What the loss takes from the model (EMO: a frozen copy of the output embedding), now,
    # before training moves the weights.
    inputs = LOSSES[cfg.loss.name].model_inputs(model, zero3=zero3)
    loss_fn = build_loss(cfg.loss.name, vocab, **cfg.loss.params, **inputs)
    marks["model"] = time.time()
    splits = load_splits(cfg, tokenizer)
    sizes = count_parameters(model)
    marks["data"] = time.time()

    # ---- DeepSpeed engine with the cosine schedule ----------------------------------------
    engine, _, _, scheduler = deepspeed.initialize(
        model=model,
        model_parameters=[p for p in model.parameters() if p.requires_grad],
        config=ds_config,
        lr_scheduler=lambda opt: torch.optim.lr_scheduler.LambdaLR(
            opt,
            lambda s: lr_factor(
                s,
                steps=train.steps,
                warmup_steps=train.warmup_steps,
                min_lr_ratio=train.min_lr_ratio,
            ),
        ),
        dist_init_required=False,  # Ray Train already set up the process group
    )
    marks["deepspeed"] = time.time()

    start_step = 0
    tokens_seen = 0.0  # non-padding input tokens trained on, all micro-batches and ranks
    reports: list[dict[str, Any]] = []  # the latest REPLAYED_REPORTS reports, oldest first
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            if Path(directory, STOPPED_FILE).is_file():
                return  # stopped for a non-finite loss: that outcome is final
            _, client_state = engine.load_checkpoint(directory, tag=CHECKPOINT_TAG)
        start_step = int(client_state["step"])
        tokens_seen = float(client_state["tokens_seen"])
        reports = client_state["reports"]

    def evaluate(step: int, final: bool) -> dict[str, float]:
        metrics: dict[str, float] = {}
        for split, examples in splits.eval_examples.items():
            scores = teacher_forced(
                engine.module,
                examples,
                vocab=vocab,
                pad_id=tokenizer.pad_token_id,
                batch_size=cfg.eval.batch_size,
                device=device,
                rank=rank,
                world_size=world_size,
            )
            metrics.update({names.eval_metric(split, k): v for k, v in scores.items()})
        every = cfg.eval.generate_every
        if splits.generation and (final or (every and step % every == 0)):
            accuracies = []
            for benchmark, records in splits.generation.items():
                texts = generate_answers(
                    engine.module,
                    tokenizer,
                    records,
                    batch_size=cfg.eval.batch_size,
                    max_new_tokens=cfg.eval.max_new_tokens,
                    max_prompt_length=cfg.data.max_length * 4,
                    chat_template=cfg.model.chat_template,
                    synced=zero3,
                    device=device,
                    rank=rank,
                    world_size=world_size,
                )
                scores = score_generation(benchmark, records, texts)
                metrics.update({names.gen_metric(benchmark, k): v for k, v in scores.items()})
                accuracies.append(scores["exact_match"])
            metrics[names.MACC] = sum(accuracies) / len(accuracies)
        return metrics

    def report(step: int, metrics: dict[str, float], save: bool) -> None:
        # NaN marks a metric with nothing to measure (e.g. decimal-place accuracy on integers):
        # leave it out rather than store a number nobody computed.
        metrics = {"step": step, **{k: v for k, v in metrics.items() if not math.isnan(v)}}
        reports.append(metrics)
        del reports[:-REPLAYED_REPORTS]
        if not save:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as directory:
            # Every rank writes its own ZeRO shard; Ray Train merges them into one checkpoint.
            # The latest reports travel with the checkpoint: see the resume below.
            state = {"step": step, "reports": reports, "tokens_seen": tokens_seen}
            engine.save_checkpoint(directory, tag=CHECKPOINT_TAG, client_state=state)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(directory))

    # Ray Train commits a checkpoint before its report reaches the sweep driver, so a crash in
    # between would lose the metrics of that step (and of the reports still queued before it)
    # for good: report the latest ones again (the Parquet sink drops steps it already has).
    for metrics in reports:
        ray.train.report({**metrics, REPLAYED_KEY: True})
    if start_step == 0:
        first = {
            names.PARAMS_TOTAL: sizes["total"],
            names.PARAMS_NON_EMBEDDING: sizes["non_embedding"],
            names.TOKENS_SEEN: 0.0,
        }
        report(0, {**first, **evaluate(0, final=False)}, save=False)
    marks["step0_report"] = time.time()

    # ---- training --------------------------------------------------------------------------
    sums = {"loss": 0.0, "tokens": 0.0, "steps": 0.0, "time": 0.0, "norm": 0.0}
    part_sums = dict.fromkeys(loss_fn.parts, 0.0)  # train/<part> for every part of the loss
    for step in range(start_step, train.steps):
        began = time.perf_counter()
        micro_batches = []
        for micro in range(train.grad_accum):
            indices = micro_batch_indices(
                seed=cfg.seed_for("order"),
                n_examples=len(splits.train),
                step=step,
                micro=micro,
                rank=rank,
                world_size=world_size,
                micro_batch_size=train.micro_batch_size,
                grad_accum=train.grad_accum,
            )
            batch = collate([splits.train[i] for i in indices], tokenizer.pad_token_id)
            micro_batches.append({k: v.to(device) for k, v in batch.items()})
        # Global token / digit counts of this step, so each micro-batch's loss is its share of
        # the token mean over the whole global batch (identical normalisation for every loss).
        local = [target_counts(b["labels"], vocab) for b in micro_batches]
        n_tokens, n_digits, n_inputs = _sum_across_ranks(
            [
                float(sum(c["n_tokens"] for c in local)),
                float(sum(c.get("n_digits", 0) for c in local)),
                float(sum(b["attention_mask"].sum() for b in micro_batches)),
            ],
            device,
        )
        normalizer = {"n_tokens": n_tokens, "n_digits": n_digits}
        step_loss = 0.0
        step_parts = dict.fromkeys(loss_fn.parts, 0.0)
        for batch in micro_batches:
            logits = engine(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).logits
            out = loss_fn(logits, batch["labels"], normalizer)  # logits (B, T, V)
            # Our loss is already this micro-batch's share of the global mean: no scaling by
            # grad_accum, and undo DeepSpeed's average over ranks to get the global-mean gradient.
            engine.backward(out.loss * world_size, scale_wrt_gas=False)
            engine.step()
            step_loss += float(out.loss.detach())
            for part, value in out.parts.items():
                step_parts[part] += float(value)  # contributions: they sum to the step's value
        step_loss, *part_values = _sum_across_ranks([step_loss, *step_parts.values()], device)
        if not math.isfinite(step_loss):
            # Stop cleanly (raising would make Ray Train retry from the last checkpoint, which
            # fails the same way): a marker checkpoint carries the reason to the Tune driver,
            # which fails the trial with it, and keeps the trial stopped if it is ever resumed.
            reason = f"loss {cfg.loss.name!r} became {step_loss} at step {step}"
            with tempfile.TemporaryDirectory() as directory:
                Path(directory, STOPPED_FILE).write_text(json.dumps({"reason": reason}))
                ray.train.report(
                    {"step": step, "train/stopped": reason},
                    checkpoint=ray.train.Checkpoint.from_directory(directory),
                )
            return
        norm = engine.get_global_grad_norm()
        sums["loss"] += step_loss
        for part, value in zip(part_sums, part_values, strict=True):
            part_sums[part] += value
        sums["tokens"] += n_tokens
        tokens_seen += n_inputs
        sums["steps"] += 1
        sums["time"] += time.perf_counter() - began
        sums["norm"] += float(norm) if norm is not None else float("nan")
        if step == start_step:
            marks["first_step"] = time.time()

        done = step + 1
        final = done == train.steps
        if done % cfg.eval.every == 0 or final:
            n = sums["steps"]
            metrics = {
                names.TRAIN_LOSS: sums["loss"] / n,
                **{names.train_metric(part): total / n for part, total in part_sums.items()},
                names.TRAIN_LR: scheduler.get_last_lr()[0],
                names.TRAIN_GRAD_NORM: sums["norm"] / n,
                names.TOKENS_SEEN: tokens_seen,
                names.TOKENS_PER_S: sums["tokens"] / sums["time"],
                names.STEP_TIME_S: sums["time"] / n,
                names.PEAK_MEM_MB: _peak_memory_mb(device),
                **evaluate(done, final),
                **startup_metrics(marks, cfg.launched_at),
            }
            marks.clear()  # reported once
            save = final or bool(train.checkpoint_every and done % train.checkpoint_every == 0)
            report(done, metrics, save)
            sums = dict.fromkeys(sums, 0.0)
            part_sums = dict.fromkeys(part_sums, 0.0)
