"""Which precision a trial trains in: bf16 where the hardware runs it natively and it pays, fp32
elsewhere.

`train.precision: auto` picks bf16 (DeepSpeed's bf16 mode: bf16 weights and activations, fp32
optimizer state; the losses and the CE decomposition compute in fp32 whatever the logits' dtype)
on a CUDA device with native bf16, and on a CPU with AMX or AVX-512 bf16 instructions for presets
of at least `CPU_BF16_MIN_PARAMS` parameters (the worker passes no parameter count for a
pretrained model: SmolLM2-135M's fine-tune was 1.1-1.2x faster per step in bf16 on the project's
CPU but its held-out CE fell far less, 1.92 vs 1.49 after 8 steps at lr 2e-5). Below that
size the bf16 step on the CPU is slower than fp32 (its matmuls are too small for AMX to pay for
the casts): measured by `bench.step_modes`, recorded in bench/README.md.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import torch

CPU_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
"""/proc/cpuinfo flags of a CPU that computes bf16 matmuls natively."""

CPU_BF16_MIN_PARAMS = 9_000_000
"""Parameters (total) from which `auto` trains in bf16 on such a CPU: the `m` preset (9.26M)
is the smallest measured faster in bf16 (1.22x), `s` (2.46M) was slower (0.87x); bench/README.md,
"Compile and bf16 (issue 23)"."""


@cache
def cpu_has_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU has AMX-bf16 or AVX-512-bf16 (Linux: its /proc/cpuinfo flags)."""
    path = Path(cpuinfo)
    if not path.is_file():
        return False
    for line in path.read_text().splitlines():
        if line.startswith("flags"):
            return bool(CPU_BF16_FLAGS & set(line.split(":", 1)[1].split()))
    return False


def use_bf16(precision: str, *, n_params: int | None = None, cuda: bool | None = None) -> bool:
    """bf16 for "bf16", fp32 for "fp32"; for "auto": bf16 on a CUDA device with native bf16
    (`cuda`: default, whether torch sees one), or on a bf16 CPU for a model of at least
    `CPU_BF16_MIN_PARAMS` parameters (`n_params`; unknown: fp32)."""
    if precision in ("bf16", "fp32"):
        return precision == "bf16"
    if precision != "auto":
        raise ValueError(f"train.precision must be auto, fp32 or bf16, got {precision!r}")
    if torch.cuda.is_available() if cuda is None else cuda:
        # Emulated bf16 (V100, T4) runs far slower than fp32 there: only native bf16 counts.
        return torch.cuda.is_bf16_supported(including_emulation=False)
    return n_params is not None and n_params >= CPU_BF16_MIN_PARAMS and cpu_has_bf16()
