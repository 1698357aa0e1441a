"""The plain single-process PyTorch loop that a numsweep trial is measured and tested against.

The same trial as `trainables.worker.loop` trains (the same `TrialConfig`: model and its seed, data,
data order, loss with its global-batch normaliser, AdamW with DeepSpeed's hyper-parameters, the
warm-up + cosine schedule, gradient clipping, gradient accumulation), written the way one would
write it without Ray or DeepSpeed: one process, `torch.optim.AdamW`,
`torch.nn.utils.clip_grad_norm_`, no evaluation. `bench.trial` times it next to a numsweep
trial; `tests/trainables/worker/test_training.py` checks that numsweep's steps equal these.

    python -m bench.plain_loop CONFIG.json OUT.json [--device cpu|cuda] [--threads N]
                               [--until-file PATH]

reads a TrialConfig (JSON) and writes the run's measurements (`PlainRun`, without the weights).
With `--until-file` it keeps training past `train.steps` (the schedule then stays at its floor)
until that file exists, so that it runs for as long as a numsweep trial next to it.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import psutil
import torch

from trainables.config import TrialConfig
from trainables.data.batching import collate
from trainables.losses import LOSSES, build_loss, target_counts
from trainables.worker.data_order import micro_batch_indices
from trainables.worker.deepspeed_config import deepspeed_config, use_bf16
from trainables.worker.schedule import lr_factor
from trainables.worker.trial_inputs import (
    check_tokenizer_for_loss,
    load_model_and_tokenizer,
    load_splits,
)

IMPORTED_AT = time.time()


@dataclass
class PlainRun:
    """What one plain run measured; per-step lists have one entry per optimizer step."""

    step_time_s: list[float] = field(default_factory=list)
    """Wall time of each step: building its micro-batches to the optimizer's update, the span the
    numsweep worker times as `perf/step_time_s`."""
    step_end_at: list[float] = field(default_factory=list)
    """Unix time at the end of each step."""
    loss: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    """Global gradient norm before clipping."""
    startup_s: dict[str, float] = field(default_factory=dict)
    """Seconds from the process's start to the end of: imports, model, data, first_step."""
    vocab_size: int = 0
    """The model's vocabulary size (V of the logits)."""
    peak_mem_mb: float = 0.0
    """Peak resident memory of the process (CPU) or peak allocated memory (CUDA)."""
    state: dict[str, torch.Tensor] = field(default_factory=dict)
    """The model's weights after the last step (CPU tensors)."""


@dataclass
class Trained:
    """What a step hook sees: the model being trained and what evaluating it takes."""

    model: torch.nn.Module
    tokenizer: Any
    vocab: Any
    splits: Any
    device: torch.device


def train(
    config: dict[str, Any] | TrialConfig,
    device: str = "cpu",
    until: Callable[[], bool] | None = None,
    on_step: Callable[[int, Trained], None] | None = None,
) -> PlainRun:
    """Train `config` for its `train.steps` steps in this process (see the module docstring);
    with `until`, go on past them until it returns True. `on_step(done, trained)`, if given, is
    called before the first step (done = 0) and after each step, outside the timed span (the
    plain Tune sweep of `bench.plain_tune` evaluates and reports there)."""
    cfg = config if isinstance(config, TrialConfig) else TrialConfig.model_validate(config)
    started = psutil.Process().create_time()
    run = PlainRun(startup_s={"imports": IMPORTED_AT - started})
    dev = torch.device(device)
    train_cfg = cfg.train
    torch.manual_seed(cfg.seed_for("init"))

    model, tokenizer = load_model_and_tokenizer(
        cfg.model,
        cfg.cache_dir,
        seed=cfg.seed_for("init"),
        data=cfg.data,
        data_seed=cfg.seed_for("data"),
    )
    model.to(dev).train()
    run.vocab_size = model.get_output_embeddings().weight.shape[0]
    vocab = check_tokenizer_for_loss(tokenizer, cfg.loss.name)
    params: dict[str, Any] = dict(cfg.loss.params)
    if "cost_embedding" in LOSSES[cfg.loss.name].required_inputs:
        # EMO's frozen copy of the output embedding at the start of training.
        params["cost_embedding"] = model.get_output_embeddings().weight.detach().clone()
    loss_fn = build_loss(cfg.loss.name, vocab, **params)
    run.startup_s["model"] = time.time() - started
    splits = load_splits(cfg, tokenizer)
    run.startup_s["data"] = time.time() - started

    # The optimizer numsweep hands DeepSpeed (one source for lr, betas, eps and weight decay).
    adam = deepspeed_config(train_cfg, world_size=1)["optimizer"]["params"]
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        trained,
        lr=adam["lr"],
        betas=tuple(adam["betas"]),
        eps=adam["eps"],
        weight_decay=adam["weight_decay"],
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: lr_factor(s, train_cfg),
    )
    bf16 = dev.type == "cuda" and use_bf16(train_cfg.precision)
    trained_view = Trained(model, tokenizer, vocab, splits, dev)
    if on_step is not None:
        on_step(0, trained_view)

    step = 0
    while step < train_cfg.steps or (until is not None and not until()):
        began = time.perf_counter()
        micro_batches = []
        for micro in range(train_cfg.grad_accum):
            indices = micro_batch_indices(
                seed=cfg.seed_for("order"),
                n_examples=len(splits.train),
                step=step,
                micro=micro,
                rank=0,
                world_size=1,
                micro_batch_size=train_cfg.micro_batch_size,
                grad_accum=train_cfg.grad_accum,
            )
            batch = collate([splits.train[i] for i in indices], tokenizer.pad_token_id)
            micro_batches.append({k: v.to(dev) for k, v in batch.items()})
        counts = [target_counts(b["labels"], vocab) for b in micro_batches]
        normalizer = {
            "n_tokens": float(sum(c["n_tokens"] for c in counts)),
            "n_digits": float(sum(c.get("n_digits", 0) for c in counts)),
        }
        step_loss = 0.0
        for batch in micro_batches:
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
                logits = model(
                    input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
                ).logits
            out = loss_fn(logits, batch["labels"], normalizer)  # logits (B, T, V)
            out.loss.backward()  # each micro-batch's loss is its share of the global mean
            step_loss += float(out.loss.detach())
        clip = train_cfg.grad_clip if train_cfg.grad_clip > 0 else math.inf
        norm = torch.nn.utils.clip_grad_norm_(trained, clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        run.grad_norm.append(float(norm))
        run.loss.append(step_loss)
        run.step_time_s.append(time.perf_counter() - began)
        run.step_end_at.append(time.time())
        if step == 0:
            run.startup_s["first_step"] = run.step_end_at[0] - started
        step += 1
        if on_step is not None:
            on_step(step, trained_view)

    if dev.type == "cuda":
        run.peak_mem_mb = torch.cuda.max_memory_allocated(dev) / 2**20
    else:
        run.peak_mem_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB
    run.state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plain_loop", description=__doc__)
    parser.add_argument("config", type=Path, help="TrialConfig as JSON")
    parser.add_argument("out", type=Path, help="where the measurements go (JSON)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--until-file", type=Path, help="train on until this file exists")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    until = args.until_file.exists if args.until_file else None
    run = train(json.loads(args.config.read_text()), device=args.device, until=until)
    measured = {f.name: getattr(run, f.name) for f in fields(run) if f.name != "state"}
    args.out.write_text(json.dumps(measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
