"""numsweep's uses of torch's internals, checked against torch 2.13.0 (`TORCH`). torch is left
unpinned above its floor (GPU users install the CUDA build of their choice), so these uses are
guarded: outside the checked range, or where an internal is missing, the caller's fallback runs
and a line says so, instead of failing a trial.

- `enable_compile_caches` (for trainables.worker.compile_step):
  `torch._inductor.config.fx_graph_cache`, `torch._functorch.config.enable_autograd_cache`; else
  inductor's defaults: a shape compiled by an earlier trial may compile again.
- `hold_gpu` (for bench/losses.py): `torch.cuda._sleep`, the spinning kernel torch's own tests
  hold a GPU with; else nothing is queued and the benchmark's queued GPU time is left out.
"""

from __future__ import annotations

from compat.versions import CheckedRange, installed_version, supported

TORCH = CheckedRange("torch", ">=2.4,<2.14", checked="2.13.0", module="compat/torch_private.py")

_CACHE_FLAGS = (
    ("torch._inductor.config", "fx_graph_cache"),
    ("torch._functorch.config", "enable_autograd_cache"),
)


def enable_compile_caches() -> bool:
    """Turn on inductor's FX-graph cache and AOT-autograd's graph cache (persistent across
    processes, under TORCHINDUCTOR_CACHE_DIR); returns whether both are on. Outside `TORCH`'s
    range, or where a flag is missing, the defaults stay and a line says so."""
    import importlib

    if not supported(TORCH):
        print(
            f"numsweep: {TORCH.message(installed_version('torch'))}; compile caches left at "
            "torch's defaults",
            flush=True,
        )
        return False
    configs = [(importlib.import_module(module), flag) for module, flag in _CACHE_FLAGS]
    missing = [f"{c.__name__}.{flag}" for c, flag in configs if not hasattr(c, flag)]
    if missing:
        print(
            f"numsweep: torch {installed_version('torch')} lacks {', '.join(missing)}; compile "
            "caches left at torch's defaults",
            flush=True,
        )
        return False
    for config, flag in configs:
        setattr(config, flag, True)
    return True


def hold_gpu(cycles: int) -> bool:
    """Queue a kernel on the current CUDA stream that spins for `cycles` GPU clock cycles
    (`torch.cuda._sleep`), so the host can queue work behind it; returns whether it was queued.
    Outside `TORCH`'s range, or where torch lacks it, nothing is queued and a line says so."""
    import torch

    if not supported(TORCH):
        print(f"numsweep: {TORCH.message(installed_version('torch'))}; no GPU sleep queued")
        return False
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        print(f"numsweep: torch {installed_version('torch')} lacks torch.cuda._sleep")
        return False
    sleep(cycles)
    return True
