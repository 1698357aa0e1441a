"""Learning-rate schedule: linear warm-up, then cosine decay to `min_lr_ratio` of the peak."""

from __future__ import annotations

import math


def lr_factor(step: int, *, steps: int, warmup_steps: int, min_lr_ratio: float) -> float:
    """Multiplier of the peak learning rate for optimizer step `step` (0-based)."""
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    decay_steps = max(1, steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / decay_steps)
    return min_lr_ratio + (1.0 - min_lr_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
