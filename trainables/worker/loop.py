"""The Ray Train worker loop: one DeepSpeed fine-tune of one trial, read top to bottom.

Every worker of a trial runs `train_loop_per_worker(config)` with the same plain-JSON
`TrialConfig`. It builds the trial (`trainables.worker.trial_setup`: model, data, DeepSpeed engine),
restores its checkpoint if it has one (`trainables.worker.checkpoint`), trains with the trial's loss
(token means over the *global* batch, so every loss is normalised the same way under gradient
accumulation and data parallelism), evaluates every `eval.every` steps
(`trainables.worker.evaluation`; and, for a loss with an auxiliary term, measures that term's
gradient against the cross-entropy's: `trainables.worker.aux_gradient`), and reports metrics (and
checkpoints, every rank saving its own
DeepSpeed shard) through `ray.train.report`, each report with the trial's cost so far
(`trainables.worker.trial_cost`). A restarted worker group resumes from the latest
checkpoint at the same step and data position.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import torch

if not torch.cuda.is_available():
    # DeepSpeed picks its accelerator at import time; on CPU-only hosts it must be told.
    os.environ.setdefault("DS_ACCELERATOR", "cpu")

from compat.ray_private import quiet_train_report_log
from records import metric_names as names
from trainables.config import TrialConfig
from trainables.data.batching import collate
from trainables.losses import target_counts
from trainables.metrics.distributed import sum_across_ranks
from trainables.worker.aux_gradient import aux_gradient_metrics
from trainables.worker.checkpoint import TrialCheckpoint
from trainables.worker.compile_step import pad_batch
from trainables.worker.data_order import micro_batch_indices
from trainables.worker.evaluation import evaluate
from trainables.worker.startup import StartupTimeline
from trainables.worker.step_stats import StepResult, StepStats
from trainables.worker.trial_cost import CostMeter
from trainables.worker.trial_setup import Trial, build_trial

# Unix time at which this module's imports (torch, transformers, DeepSpeed, Ray Train) were done:
# the start-up timeline's "imports" mark.
IMPORTED_AT = time.time()


def train_loop_per_worker(config: dict[str, Any]) -> None:
    cfg = TrialConfig.model_validate(config)
    timeline = StartupTimeline(cfg.launched_at, IMPORTED_AT)
    quiet_train_report_log()
    trial = build_trial(cfg, timeline)
    cost = CostMeter(cfg.launched_at, ready_at=time.time(), device=trial.device)
    checkpoint = TrialCheckpoint(trial.engine, cost)
    if not checkpoint.restore():
        return  # stopped for a non-finite loss: that outcome is final
    checkpoint.replay()
    if checkpoint.start_step == 0:
        sizes = {names.PARAMS_TOTAL: trial.sizes["total"]}
        sizes[names.PARAMS_NON_EMBEDDING] = trial.sizes["non_embedding"]
        ran = {names.BF16: float(trial.bf16), names.COMPILED: float(trial.compiled)}
        metrics = {**sizes, **ran, names.TOKENS_SEEN: 0.0, **_evaluate(trial, 0, final=False)}
        metrics.update(_aux_gradients(trial, 0))
        metrics.update(cost.metrics())
        checkpoint.report(0, metrics, save=False)
    timeline.mark("step0_report")

    stats = StepStats(trial.loss_fn.parts)
    for step in range(checkpoint.start_step, cfg.train.steps):
        result = train_step(trial, step)
        if not math.isfinite(result.loss):
            checkpoint.stop(step, f"loss {cfg.loss.name!r} became {result.loss} at step {step}")
            return
        stats.add(result)
        checkpoint.tokens_seen += result.n_inputs
        if step == checkpoint.start_step:
            if trial.compiled:
                _announce_compile(timeline, result.seconds)
            timeline.mark("first_step")

        done = step + 1
        final = done == cfg.train.steps
        if done % cfg.eval.every == 0 or final:
            metrics = {
                **stats.metrics(),
                names.TRAIN_LR: trial.scheduler.get_last_lr()[0],
                names.TOKENS_SEEN: checkpoint.tokens_seen,
                names.PEAK_MEM_MB: _peak_memory_mb(trial.device),
                **_evaluate(trial, done, final),
                **_aux_gradients(trial, done),
                **timeline.take_metrics(),
                **cost.metrics(),
            }
            every = cfg.train.checkpoint_every
            checkpoint.report(done, metrics, save=final or bool(every and done % every == 0))
            stats.reset()


def train_step(trial: Trial, step: int) -> StepResult:
    """One optimizer step of `trial` over its global batch at `step` (all ranks)."""
    began = time.perf_counter()
    batches = micro_batches(trial, step)
    normalizer, n_tokens, n_inputs = global_counts(trial, batches)
    engine, parts = trial.engine, trial.loss_fn.parts
    totals = torch.zeros(1 + len(parts), dtype=torch.float64, device=trial.device)  # loss, parts
    own_norm = None
    for micro, batch in enumerate(batches):
        logits = engine(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        out = trial.loss_step(logits, batch["labels"], normalizer)  # logits (B, T, V)
        # Our loss is already this micro-batch's share of the global mean: no scaling by
        # grad_accum, and undo DeepSpeed's average over ranks to get the global-mean gradient.
        engine.backward(out.loss * trial.world_size, scale_wrt_gas=False)
        if micro == len(batches) - 1 and trial.worker_clip is not None:
            own_norm = clip_gradients(engine.module, trial.worker_clip)  # the whole step's gradient
        engine.step()
        # Contributions: summed over micro-batches and ranks they give the step's values.
        values = [out.loss.detach(), *(out.parts[p] for p in parts)]
        totals += torch.stack(values).to(torch.float64)
    loss, *part_values = sum_across_ranks(totals).tolist()
    norm = engine.get_global_grad_norm() if own_norm is None else own_norm
    return StepResult(
        loss=loss,
        parts=dict(zip(parts, part_values, strict=True)),
        n_tokens=n_tokens,
        n_inputs=n_inputs,
        grad_norm=float(norm) if norm is not None else float("nan"),
        seconds=time.perf_counter() - began,
    )


def global_counts(
    trial: Trial, batches: list[dict[str, torch.Tensor]]
) -> tuple[dict[str, Any], float, float]:
    """The loss's `normalizer` for one step whose micro-batches on this rank are `batches` (the
    global batch's token and digit counts, so each micro-batch's loss is its share of the token
    mean over the whole global batch: the same normalisation for every loss), and the global
    batch's target tokens and non-padding input tokens. All ranks must call it."""
    local = [target_counts(b["labels"], trial.vocab) for b in batches]
    n_tokens, n_digits, n_inputs = sum_across_ranks(
        [
            float(sum(c["n_tokens"] for c in local)),
            float(sum(c.get("n_digits", 0) for c in local)),
            float(sum(b["attention_mask"].sum() for b in batches)),
        ]
    )
    normalizer: dict[str, Any] = {"n_tokens": n_tokens, "n_digits": n_digits}
    if trial.compiled:  # tensors, so that a new count is a new value, not a new graph
        normalizer = {k: torch.tensor(v, device=trial.device) for k, v in normalizer.items()}
    return normalizer, n_tokens, n_inputs


def clip_gradients(model: torch.nn.Module, max_norm: float) -> float:
    """Clip `model`'s gradients (complete and, at ZeRO stage 0, already averaged over ranks after
    the step's last backward) to `max_norm` (0: no clip) and return their norm before clipping,
    as DeepSpeed's clip would (`trainables.worker.deepspeed_config.worker_clipping`)."""
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm or math.inf)
    return float(norm)


def micro_batches(trial: Trial, step: int) -> list[dict[str, torch.Tensor]]:
    """This rank's micro-batches of `step`, in the data order every rank follows."""
    cfg, train = trial.config, trial.config.train
    batches = []
    for micro in range(train.grad_accum):
        indices = micro_batch_indices(
            seed=cfg.seed_for("order"),
            n_examples=len(trial.splits.train),
            step=step,
            micro=micro,
            rank=trial.rank,
            world_size=trial.world_size,
            micro_batch_size=train.micro_batch_size,
            grad_accum=train.grad_accum,
        )
        pad_id = trial.tokenizer.pad_token_id
        batch = collate([trial.splits.train[i] for i in indices], pad_id)
        if trial.compiled:  # a few lengths, so a few graphs
            batch = pad_batch(batch, pad_id)
        batches.append({k: v.to(trial.device) for k, v in batch.items()})
    return batches


def _evaluate(trial: Trial, step: int, final: bool) -> dict[str, float]:
    return evaluate(
        trial.engine.module,
        trial.splits,
        trial.config,
        tokenizer=trial.tokenizer,
        vocab=trial.vocab,
        step=step,
        final=final,
        device=trial.device,
        rank=trial.rank,
        world_size=trial.world_size,
    )


def _aux_gradients(trial: Trial, step: int) -> dict[str, float]:
    """The manipulation check at a report after `step` updates (`trainables.worker.aux_gradient`):
    on the global batch of the next update, at the current weights. Nothing for a loss without
    an auxiliary term, or with `eval.aux_gradient` off. All ranks must call it."""
    if not (trial.loss_fn.auxiliary and trial.config.eval.aux_gradient):
        return {}
    batches = micro_batches(trial, step)
    normalizer, _, _ = global_counts(trial, batches)
    return aux_gradient_metrics(trial.engine.module, trial.loss_fn, batches, normalizer)


def _announce_compile(timeline: StartupTimeline, seconds: float) -> None:
    """The first compiled step's seconds (its compile or cache load, forward and backward)."""
    timeline.took("compile", seconds)
    print(f"numsweep: train.compile: first compiled step took {seconds:.1f} s", flush=True)


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
