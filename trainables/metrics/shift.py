"""The causal-LM input convention shared by the metrics: validate (logits, labels) and shift them
so that position t's logits line up with label t+1."""

from __future__ import annotations

import torch


def shift_for_next_token(
    logits: torch.Tensor, labels: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits (B, T, V), labels (B, T)) -> (logits[:, :-1] (B, T−1, V), labels[:, 1:] (B, T−1)).

    Labels follow the Hugging Face convention: aligned with the input ids, −100 = ignore.
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(labels, torch.Tensor):
        raise TypeError(
            f"logits and labels must be tensors, got {type(logits).__name__} and "
            f"{type(labels).__name__}"
        )
    if logits.dim() != 3:
        raise ValueError(f"logits must be (B, T, V), got shape {tuple(logits.shape)}")
    if labels.dim() != 2 or labels.shape != logits.shape[:2]:
        raise ValueError(
            f"labels must be (B, T) = {tuple(logits.shape[:2])}, got shape {tuple(labels.shape)}"
        )
    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.is_complex():
        raise TypeError(f"labels must be an integer tensor, got {labels.dtype}")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"logits must be a floating-point tensor, got {logits.dtype}")
    return logits[:, :-1], labels[:, 1:].long()
