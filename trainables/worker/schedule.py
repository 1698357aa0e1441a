"""Learning-rate schedules (`train.schedule`): a linear warm-up, then one of

- `cosine`: cosine decay from the peak to `min_lr_ratio` of it at the last step;
- `constant`: the peak to the end;
- `wsd` (warmup-stable-decay): the peak until `decay_start`, then a linear fall to
  `min_lr_ratio` of it over `decay_steps` steps, the floor after that.

A cosine schedule flattens every learning curve towards its end whatever the model has left to
learn: study 5's (200 steps, 10 warm-up, floor 0.1) had given 40% of its summed learning rate by
step 50, 75% by step 100 and 93% by step 150. Under `constant`, or `wsd` before its registered
`decay_start`, a flat curve is the model's, not the schedule's.
"""

from __future__ import annotations

import math

from trainables.config import TrainConfig


def lr_factor(step: int, train: TrainConfig) -> float:
    """Multiplier of the peak learning rate for optimizer step `step` (0-based) under `train`'s
    schedule (`schedule`, `steps`, `warmup_steps`, `min_lr_ratio`, `decay_start`,
    `decay_steps`); steps past `steps` keep the last step's factor."""
    warmup = train.warmup_steps
    if warmup > 0 and step < warmup:
        return (step + 1) / warmup
    floor = train.min_lr_ratio
    if train.schedule == "constant":
        return 1.0
    if train.schedule == "wsd":
        assert train.decay_start is not None and train.decay_steps is not None  # validated
        # Step decay_start still trains at the peak; decay_start + decay_steps is the first
        # step at the floor.
        progress = min(1.0, max(0.0, (step - train.decay_start) / train.decay_steps))
        return 1.0 - (1.0 - floor) * progress
    decay_steps = max(1, train.steps - warmup)
    progress = min(1.0, (step - warmup) / decay_steps)
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))
