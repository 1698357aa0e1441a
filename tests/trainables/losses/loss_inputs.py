"""What the loss tests share: a tiny vocabulary (ids 0..9 are the digits '0'..'9', 10 is '.',
11.. other tokens), the losses whose aux term grows with digit distance, EMO's cost embedding,
`make` (build_loss with the inputs a loss requires) and random batches."""

from __future__ import annotations

import math

import torch

from trainables.losses import LOSSES, NumberVocab, build_loss

VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=10)
V = 12
DISTANCE_LOSSES = [
    ("ntl_mse", {}),
    ("ntl_was", {}),
    # p_d(k) ∝ exp(−(k − y)² / tau) is strictly decreasing in |k − y| for any tau, but with
    # tau = 1 it falls below fp32 resolution from |k − y| = 4 on; tau = 10 keeps it visible.
    ("dist2", {"tau": 10.0}),
    ("del", {"distance": True}),
]


def emo_embedding(vocab_size: int = V) -> torch.Tensor:
    """(V, 2): token i at angle i·π/12, scaled by (i + 1) so that row normalisation matters."""
    return torch.tensor(
        [
            [(i + 1) * math.cos(i * math.pi / 12), (i + 1) * math.sin(i * math.pi / 12)]
            for i in range(vocab_size)
        ]
    )


def make(name: str, vocab_size: int = V, **params: object):
    """build_loss with the inputs a loss requires (EMO's cost embedding)."""
    if "cost_embedding" in LOSSES[name].required_inputs:
        params.setdefault("cost_embedding", emo_embedding(vocab_size))
    return build_loss(name, VOCAB, **params)


def random_batch(
    seed: int = 0, batch: int = 3, length: int = 17, vocab_size: int = V, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random logits and labels with digits, dots, other tokens and ignored (-100) labels."""
    gen = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(batch, length, vocab_size, generator=gen)).to(dtype)
    labels = torch.randint(0, vocab_size, (batch, length), generator=gen)
    labels[torch.rand(batch, length, generator=gen) < 0.15] = -100
    return logits, labels
