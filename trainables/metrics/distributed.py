"""Summing metric accumulators over torch.distributed ranks (gloo on CPU, NCCL on GPU), so every
rank ends up with the metrics of the whole evaluation set."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import torch
import torch.distributed as dist


def distributed_active() -> bool:
    return dist.is_available() and dist.is_initialized()


def _collective_device(tensor: torch.Tensor) -> torch.device:
    # NCCL only reduces CUDA tensors; gloo reduces CPU (and CUDA) tensors.
    if "nccl" in str(dist.get_backend()).lower():
        return torch.device("cuda", torch.cuda.current_device())
    return tensor.device if tensor.device.type in ("cpu", "cuda") else torch.device("cpu")


def all_reduce_tensor(tensor: torch.Tensor, op: dist.ReduceOp.RedOpType) -> torch.Tensor:
    """`tensor` reduced with `op` over all ranks (a new tensor on `tensor`'s device), or `tensor`
    itself when torch.distributed is not initialised or has one rank (a trial with one worker:
    the reduction is the identity, and gloo's round trip cost 0.1-0.2 ms a call, twice a step,
    about 2% of a `tiny` step; bench/README.md, "Per-step overhead")."""
    if not distributed_active() or dist.get_world_size() == 1:
        return tensor
    device = _collective_device(tensor)
    work = tensor.detach().to(device=device, copy=True)
    dist.all_reduce(work, op=op)
    return work.to(tensor.device)


@overload
def sum_across_ranks(values: torch.Tensor) -> torch.Tensor: ...
@overload
def sum_across_ranks(values: Sequence[float]) -> list[float]: ...
def sum_across_ranks(values: torch.Tensor | Sequence[float]) -> torch.Tensor | list[float]:
    """Elementwise sum over ranks, in float64 for lists (counts stay exact up to 2**53). All ranks
    must call it with the same number of values."""
    if isinstance(values, torch.Tensor):
        return all_reduce_tensor(values, dist.ReduceOp.SUM)
    tensor = torch.tensor(list(values), dtype=torch.float64)
    return all_reduce_tensor(tensor, dist.ReduceOp.SUM).tolist()
