"""Which training examples each worker sees at each step: a pure function of (seed, step).

The order is a seeded permutation per epoch, so it is identical for every loss of the same seed
(fair comparison) and a resumed run picks up at exactly the same data position from the step
number alone (no sampler state to checkpoint). The global batch of one optimizer step is
`micro_batch_size * grad_accum * world_size` consecutive positions of that order; worker `rank`
takes micro-batch `micro` as the slice `[(micro * world_size + rank) * mbs, … + mbs)`.
"""

from __future__ import annotations

import torch


def epoch_permutation(seed: int, epoch: int, n_examples: int) -> torch.Tensor:
    """(n_examples,) long: the example order of `epoch`."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n_examples, generator=generator)


def micro_batch_indices(
    *,
    seed: int,
    n_examples: int,
    step: int,
    micro: int,
    rank: int,
    world_size: int,
    micro_batch_size: int,
    grad_accum: int,
) -> list[int]:
    """Example indices of micro-batch `micro` of optimizer step `step` on worker `rank`."""
    if n_examples < 1:
        raise ValueError("no training examples")
    global_batch = micro_batch_size * grad_accum * world_size
    start = step * global_batch + (micro * world_size + rank) * micro_batch_size
    orders: dict[int, torch.Tensor] = {}  # the (usually one) epochs this micro-batch touches
    indices = []
    for position in range(start, start + micro_batch_size):
        epoch, offset = divmod(position, n_examples)
        if epoch not in orders:
            orders[epoch] = epoch_permutation(seed, epoch, n_examples)
        indices.append(int(orders[epoch][offset]))
    return indices
