"""The DeepSpeed config a trial runs with, generated from its `TrainConfig`.

Batch sizes, the optimizer and the precision come from the trial config; a user's own DeepSpeed
JSON (`train.deepspeed_config`) is merged over the rest (e.g. ZeRO-3 partitioning settings,
communication buckets). The learning-rate schedule is ours (`trainables.worker.schedule`), so a
"scheduler" key in a user's config is rejected rather than silently fighting ours.
"""

from __future__ import annotations

from typing import Any

from trainables.config import TrainConfig
from trainables.worker.precision import use_bf16

# Keys that numsweep owns: the trial config is the single source of truth for them.
_OWNED_KEYS = (
    "train_batch_size",
    "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps",
    "scheduler",
)


def optimizer_params(train: TrainConfig, *, cuda: bool) -> dict[str, Any]:
    """DeepSpeed's `optimizer.params` for `train.optimizer`. For torch's AdamW (`torch_adam`)
    `fused` only on a CUDA device: that is the kernel the GPU check measures, and on a CPU the
    trial keeps torch's default implementation, the one every torch from the floor (2.4) has
    run the project's CPU tests with."""
    params: dict[str, Any] = {
        "lr": train.lr,
        "betas": [0.9, 0.95],
        "eps": 1e-8,
        "weight_decay": train.weight_decay,
    }
    if train.optimizer == "torch_adamw":
        params["torch_adam"] = True
        if cuda:
            params["fused"] = True
    return params


def deepspeed_config(
    train: TrainConfig, world_size: int, *, bf16: bool | None = None, cuda: bool = False
) -> dict[str, Any]:
    """The DeepSpeed config for `world_size` data-parallel workers; `bf16` is the resolved
    precision (`trainables.worker.precision.use_bf16`; default: from `train.precision` alone, which
    for `auto` means bf16 only on a CUDA device with native bf16); `cuda`: the workers train on CUDA
    devices (torch's fused AdamW for `train.optimizer: torch_adamw`)."""
    user = dict(train.deepspeed_config or {})
    clash = sorted(k for k in _OWNED_KEYS if k in user)
    if clash:
        raise ValueError(
            f"train.deepspeed_config sets {', '.join(clash)}: numsweep derives these from "
            "train.micro_batch_size, train.grad_accum and the cosine schedule"
        )
    user_stage = (user.get("zero_optimization") or {}).get("stage", train.zero_stage)
    if user_stage != train.zero_stage:
        raise ValueError(
            f"train.deepspeed_config sets zero_optimization.stage={user_stage} but "
            f"train.zero_stage={train.zero_stage}: set train.zero_stage"
        )
    zero: dict[str, Any] = {"stage": train.zero_stage}
    if train.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu"}
    config: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": train.micro_batch_size,
        "gradient_accumulation_steps": train.grad_accum,
        "train_batch_size": train.micro_batch_size * train.grad_accum * world_size,
        "optimizer": {"type": "AdamW", "params": optimizer_params(train, cuda=cuda)},
        "gradient_clipping": train.grad_clip,
        "zero_optimization": zero,
        "bf16": {"enabled": use_bf16(train.precision) if bf16 is None else bf16},
        "steps_per_print": 10**9,  # numsweep reports metrics itself
        "wall_clock_breakdown": False,
    }
    for key, value in user.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            config[key] = {**config[key], **value}
        else:
            config[key] = value
    return config


def worker_clipping(config: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """(`config`, the norm the worker clips at): where DeepSpeed's engine clips without keeping
    the gradient norm (ZeRO stage 0 in fp32, where `get_global_grad_norm()` is None), the worker
    clips instead, with `torch.nn.utils.clip_grad_norm_` after the step's last backward, and
    keeps the norm it returns; `config` then has `gradient_clipping` 0. Elsewhere: `config`
    unchanged and None (DeepSpeed clips and keeps the norm).

    The same clip as DeepSpeed's (scale by max_norm / (norm + 1e-6) when below 1; 0 = off), with
    torch's fused norm: at stage 0 DeepSpeed's clip plus the worker's own norm took 1.2 ms of a
    `tiny` step against 0.46 ms for torch's (bench/README.md, "Per-step overhead")."""
    stage = config["zero_optimization"]["stage"]
    low_precision = config["bf16"]["enabled"] or (config.get("fp16") or {}).get("enabled", False)
    if stage != 0 or low_precision:
        return config, None
    return {**config, "gradient_clipping": 0.0}, float(config.get("gradient_clipping") or 0.0)
