"""Which way is better for each metric: the one table every command consults before it marks a
"best" value.

Metric names are slash paths (`eval/test/ce`, `gen/gsm8k/exact_match`); the direction is decided by
the last component. Digit entropy deliberately has no direction: the DEL paper compares losses that
over-sharpen (too low) and over-flatten (too high) the digit distribution, so neither end is "best".
Log-confidence has none either: "What Scales in Cross-Entropy Scaling Law?" treats confidence as
noise, and the compensated loss penalises it, so the most confident arm is not the best one.
"""

from __future__ import annotations

from typing import Literal

Direction = Literal["max", "min"]

HIGHER_IS_BETTER: frozenset[str] = frozenset(
    {"digit_acc", "digit_acc_int", "digit_acc_dec", "exact_match", "macc"}
)
"""Last path components where a larger value is better."""

LOWER_IS_BETTER: frozenset[str] = frozenset(
    {"ce", "error_entropy", "self_alignment", "mae", "rel_error", "loss"}
)
"""Last path components where a smaller value is better (`loss` covers `train/loss`)."""

NO_DIRECTION: frozenset[str] = frozenset({"digit_entropy", "log_confidence"})
"""Metrics that are compared, never ranked (see the module docstring)."""


def direction(metric: str) -> Direction | None:
    """ "max", "min", or None when no value of `metric` is better than another.

    Per-position digit accuracies (`digit_acc_int_0`, `digit_acc_dec_3`, ...) count as accuracies.
    Anything not listed (learning rate, throughput, parameter counts) has no direction.
    """
    leaf = metric.rsplit("/", 1)[-1]
    if leaf in NO_DIRECTION:
        return None
    if leaf in HIGHER_IS_BETTER or leaf.startswith("digit_acc_"):
        return "max"
    if leaf in LOWER_IS_BETTER:
        return "min"
    return None
