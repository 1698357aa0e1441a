"""`train.compile`: the training forward and the loss through `torch.compile`, compiled once per
machine.

- The model is compiled in place through DeepSpeed's `engine.compile` (which calls
  `nn.Module.compile`, so parameter names and checkpoints stay those of the eager model); the
  loss object is compiled with `torch.compile`. Evaluation runs eager
  (`trainables.worker.evaluation.evaluate`), so the compiled graphs only ever see training batches.
- Shapes stay few: every training batch is padded on the right to a multiple of `PAD_MULTIPLE`
  tokens (padding is masked out of attention and carries no label, so the loss and its gradient
  are those of the unpadded batch up to float summation order), and graphs are static
  (`dynamic=False`): a trial compiles one graph per padded length it meets.
- Inductor's FX-graph, AOT-autograd and kernel caches live under `<cache_dir>/inductor`,
  shared by every trial on the machine: the first trial of a shape pays the compile, later ones
  load it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from compat.torch_private import enable_compile_caches
from trainables.config import TrialConfig

PAD_MULTIPLE = 16
"""Training batches are padded to a multiple of this many tokens when compiled."""

AUTO_COMPILE_MIN_STEPS = 1000
"""`train.compile: auto` compiles a preset model's trial on a CUDA device from this many steps.
On an H200 (bench/README.md, "Compile on a GPU") the compiled step of tiny, xs, s and l was
1.9-2.3x as fast as the eager one (9.6-32 ms saved a step). A trial whose graphs are in the
inductor cache (a sweep's later trials) compiles in about 7 s and saves 9.6-32 s in 1000 steps;
a cold compile (13-40 s, once per machine and shape) is paid back within 1000-2800 steps."""


def compile_wanted(config: TrialConfig, *, cuda: bool) -> bool:
    """Whether the trial's training step is compiled (`train.compile`, `auto` resolved for a
    trial on a CUDA device (`cuda`) or on the CPU).

    `auto` compiles a from-scratch preset of at least `AUTO_COMPILE_MIN_STEPS` steps on a CUDA
    device, without ZeRO-3 (which cannot be compiled). Never on a CPU: on the project machines
    the compiled step was no faster than the eager one where the matrix products are most of
    the step (bench/README.md, "`train.compile` on the CPU"), and its first compile costs
    minutes there. Pretrained models: not measured, so not compiled by `auto`."""
    setting = config.train.compile
    if setting == "auto":
        return (
            cuda
            and config.model.preset is not None
            and config.train.zero_stage != 3
            and config.train.steps >= AUTO_COMPILE_MIN_STEPS
        )
    return setting == "on"


def inductor_cache_dir(cache_dir: str | Path) -> Path:
    return Path(cache_dir) / "inductor"


def use_persistent_caches(cache_dir: str | Path) -> Path:
    """Point inductor's caches (FX graphs, AOT-autograd graphs, compiled kernels) at
    `<cache_dir>/inductor`, before anything compiles; returns that folder."""
    folder = inductor_cache_dir(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    enable_compile_caches()  # torch's internals; a guarded fallback (compat.torch_private)
    return folder


def compile_engine(engine: Any, loss_fn: Any, cache_dir: str | Path) -> Any:
    """Compile `engine`'s module in place and return the compiled loss (call it like `loss_fn`)."""
    folder = use_persistent_caches(cache_dir)
    print(
        "numsweep: train.compile: compiling the training forward and loss on the first step "
        f"(inductor cache {folder}; a shape compiled before loads from it)",
        flush=True,
    )
    engine.compile(compile_kwargs={"dynamic": False})
    return torch.compile(loss_fn, dynamic=False)


def pad_batch(batch: dict[str, torch.Tensor], pad_id: int) -> dict[str, torch.Tensor]:
    """`batch` (input_ids, attention_mask, labels; (B, T)) padded on the right to a multiple of
    PAD_MULTIPLE tokens: pad ids, mask 0, label -100."""
    length = batch["input_ids"].shape[1]
    extra = -length % PAD_MULTIPLE
    if not extra:
        return batch
    fill = {"input_ids": pad_id, "attention_mask": 0, "labels": -100}
    return {k: torch.nn.functional.pad(v, (0, extra), value=fill[k]) for k, v in batch.items()}
