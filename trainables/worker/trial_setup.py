"""Everything one worker of a trial trains with, built from its `TrialConfig`: model, tokenizer,
loss, data and the DeepSpeed engine with the learning-rate schedule (`build_trial`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ray.train
import torch
import torch.distributed as dist

from compat.deepspeed_private import (
    import_deepspeed,
    init_distributed_without_shm_comm,
    skip_backward_allreduce,
)
from trainables.config import TrialConfig
from trainables.losses import LOSSES, NumberVocab, build_loss
from trainables.losses.contract import TokenLoss
from trainables.models.presets import count_parameters
from trainables.worker.compile_step import compile_engine, compile_wanted
from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping
from trainables.worker.deepspeed_ops import announce_jit_builds, trial_ops
from trainables.worker.precision import use_bf16
from trainables.worker.schedule import lr_factor
from trainables.worker.startup import StartupTimeline
from trainables.worker.trial_inputs import (
    Splits,
    check_tokenizer_for_loss,
    load_model_and_tokenizer,
    load_splits,
)

deepspeed = import_deepspeed()


@dataclass
class Trial:
    """One worker's trial: what the training loop and the evaluation read."""

    config: TrialConfig
    engine: Any
    """The DeepSpeed engine around the model (`engine.module` is the model)."""
    scheduler: torch.optim.lr_scheduler.LambdaLR
    tokenizer: Any
    vocab: NumberVocab | None
    """The tokenizer's digit tokens (None for a tokenizer without single-digit tokens)."""
    loss_fn: TokenLoss
    loss_step: Any
    """What the training step calls as the loss: `loss_fn`, or its compiled form."""
    compiled: bool
    """The training forward and loss are compiled (`train.compile`)."""
    bf16: bool
    """The model trains in bf16 (DeepSpeed's bf16 mode), else fp32 (`train.precision`)."""
    splits: Splits
    sizes: dict[str, int]
    """`count_parameters` of the model: total and non-embedding."""
    device: torch.device
    rank: int
    world_size: int
    worker_clip: float | None = None
    """The gradient-norm clip the worker applies itself (0: none, the norm still measured), where
    DeepSpeed's engine would clip without keeping the norm; None: the engine clips
    (`trainables.worker.deepspeed_config.worker_clipping`)."""
    hf_deepspeed_config: Any = None
    """ZeRO-3: transformers' live `HfDeepSpeedConfig`, kept alive as long as the trial."""


def skip_one_rank_all_reduce(engine: Any, worker_clip: float | None) -> bool:
    """Turn off the engine's gradient all-reduce after each backward where it is the identity:
    one data-parallel rank, on an engine without ZeRO in fp32, the one whose clipping the worker
    took over (`worker_clip` not None, `trainables.worker.deepspeed_config.worker_clipping`).
    Returns whether it did.

    There DeepSpeed still flattens every gradient into buckets, all-reduces them over the
    one-rank group, divides by 1 and copies them back: 3-4% of a `tiny` step on the project's
    CPUs (bench/README.md, "Per-step overhead"), for the same gradients. ZeRO stages and the bf16
    optimizer also move gradients into the optimizer's own buffers in that pass, so they keep
    it.

    The switch is DeepSpeed's own, not a documented setting (`compat.deepspeed_private`): where a
    DeepSpeed lacks it the all-reduce stays on, which costs time, not correctness
    (tests/trainables/worker/test_trial_setup.py fails on such a version)."""
    if worker_clip is None or engine.dp_world_size != 1:
        return False
    return skip_backward_allreduce(engine)


def describe_engine(engine: Any, device: torch.device, world_size: int) -> str:
    """One line of what the trial trains with: the process group's backend (gloo, or NCCL on
    GPUs), the ranks and device, the optimizer DeepSpeed built (torch's AdamW says whether it
    is fused) and the ZeRO stage; the GPU check's report quotes it (bench/gpu_check.sh)."""
    optimizer = engine.basic_optimizer
    name = type(optimizer).__name__
    if isinstance(optimizer, torch.optim.Optimizer) and "fused" in optimizer.defaults:
        name += " (fused)" if optimizer.defaults["fused"] else " (not fused)"
    return (
        f"numsweep: torch.distributed backend {dist.get_backend()}, {world_size} rank(s) on "
        f"{device.type}, optimizer {name}, ZeRO stage {engine.zero_optimization_stage()}"
    )


def build_trial(cfg: TrialConfig, timeline: StartupTimeline) -> Trial:
    """Build this worker's trial, marking the timeline's model, data and deepspeed phases."""
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(cfg.seed_for("init"))
    train = cfg.train
    cuda = device.type == "cuda"
    announce_jit_builds(
        trial_ops(offload_optimizer=train.offload_optimizer, optimizer=train.optimizer)
    )
    # Ray Train set up the process group; DeepSpeed must wrap it before it reads any config
    # (else it sizes batches for a world of 1). Without the shared-memory op DeepSpeed's CPU
    # accelerator would load here: it serves inference only (compat says why).
    init_distributed_without_shm_comm(deepspeed, dist.get_backend())
    zero3, hf_ds_config = train.zero_stage == 3, None
    if zero3:
        # ZeRO-3: a pretrained model's weights are partitioned as they are loaded, never whole
        # on one rank (transformers' from_pretrained follows a live HfDeepSpeedConfig), so the
        # config (and the precision: `auto` without a parameter count is fp32 on a CPU) comes
        # first. Presets are small and built whole; deepspeed.initialize partitions them.
        from transformers.integrations import HfDeepSpeedConfig

        bf16 = use_bf16(train.precision, cuda=cuda)
        ds_config = deepspeed_config(train, world_size, bf16=bf16, cuda=cuda)
        hf_ds_config = HfDeepSpeedConfig(ds_config)  # must stay alive: kept in the Trial
    model, tokenizer = load_model_and_tokenizer(
        cfg.model,
        cfg.cache_dir,
        seed=cfg.seed_for("init"),
        data=cfg.data,
        data_seed=cfg.seed_for("data"),
    )
    sizes = count_parameters(model)
    if not zero3:
        # On a CPU, `auto` weighs presets only; a pretrained model stays fp32 unless asked
        # (why: trainables/worker/precision.py).
        n_params = sizes["total"] if cfg.model.preset is not None else None
        bf16 = use_bf16(train.precision, n_params=n_params, cuda=cuda)
        ds_config = deepspeed_config(train, world_size, bf16=bf16, cuda=cuda)
    vocab = check_tokenizer_for_loss(tokenizer, cfg.loss.name)
    # What the loss takes from the model (EMO: a frozen copy of the output embedding), now,
    # before training moves the weights.
    inputs = LOSSES[cfg.loss.name].model_inputs(model, zero3=zero3)
    loss_fn = build_loss(cfg.loss.name, vocab, **cfg.loss.params, **inputs)
    timeline.mark("model")
    splits = load_splits(cfg, tokenizer)
    timeline.mark("data")
    ds_config, worker_clip = worker_clipping(ds_config)
    engine, _, _, scheduler = deepspeed.initialize(
        model=model,
        model_parameters=[p for p in model.parameters() if p.requires_grad],
        config=ds_config,
        lr_scheduler=lambda opt: torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(s, train)
        ),
        dist_init_required=False,  # Ray Train already set up the process group
    )
    skip_one_rank_all_reduce(engine, worker_clip)
    if rank == 0:
        print(describe_engine(engine, device, world_size), flush=True)
    compiled = compile_wanted(cfg, cuda=cuda)
    loss_step = compile_engine(engine, loss_fn, cfg.cache_dir) if compiled else loss_fn
    timeline.mark("deepspeed")
    return Trial(
        config=cfg,
        engine=engine,
        scheduler=scheduler,
        tokenizer=tokenizer,
        vocab=vocab,
        loss_fn=loss_fn,
        loss_step=loss_step,
        compiled=compiled,
        bf16=bf16,
        splits=splits,
        sizes=sizes,
        device=device,
        rank=rank,
        world_size=world_size,
        worker_clip=worker_clip,
        hf_deepspeed_config=hf_ds_config,
    )
