"""Digit positions and number places in a batch of (shifted) target ids.

Shared by the digit losses and the digit metrics. Everything here is vectorised over the
batch (no Python loop over tokens) and never indexes a table with the ignore id -100.

Number spans: a span is a maximal run of target tokens in one row that are digits or '.'.
- A span that has a '.' and does not start with it has integer places before its first '.'
  (units = 0, tens = 1, ...) and decimal places after it: the token k positions after the
  first '.' has decimal place k (1 = right after it). A later '.' also takes a position, so
  in `1.2.3` the '3' has decimal place 3.
- A span with no '.', or one that starts with '.', is all integer places. A digit's integer
  place is the number of digits after it in that part of the span (a '.' inside a span that
  starts with '.' does not count as a place: in `.5.3` the '5' is tens and the '3' units).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from trainables.losses.vocab import NumberVocab


def digit_values(targets: torch.Tensor, vocab: NumberVocab) -> torch.Tensor:
    """The digit value 0..9 of each target, -1 where the target is not a digit (or is -100).

    targets: LongTensor of any shape; returns a LongTensor of the same shape.
    """
    if vocab.first_digit_id is not None:
        # '0'..'9' are consecutive ids: the value is an offset (-100 falls outside 0..9)
        offset = targets - vocab.first_digit_id
        return torch.where((offset >= 0) & (offset <= 9), offset, -1)
    ids = vocab.digit_id_tensor(targets.device)  # (10,)
    # Compare against the ten ids instead of indexing a (V,) table: no -100 index can occur.
    match = targets.unsqueeze(-1) == ids  # (..., 10), at most one True per position
    values = (match.long() * torch.arange(10, device=targets.device)).sum(-1)  # (...)
    return torch.where(match.any(-1), values, -1)


def dot_mask(targets: torch.Tensor, vocab: NumberVocab) -> torch.Tensor:
    """BoolTensor, True where the target is the dot token (all False when `dot_id` is None)."""
    if vocab.dot_id is None:
        return torch.zeros_like(targets, dtype=torch.bool)
    return targets == vocab.dot_id


def number_places(targets: torch.Tensor, vocab: NumberVocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer and decimal place of every digit target, following the span rules above.

    targets: LongTensor (B, T) of target ids (-100 = ignored, never a digit).
    Returns (integer_place, decimal_place), both LongTensor (B, T):
    integer_place is 0 for units, 1 for tens, ... and -1 where the position is not an
    integer-place digit; decimal_place is k >= 1 for the digit k positions after the span's
    first '.' and -1 where the position is not a decimal-place digit.
    """
    if targets.dim() != 2:
        raise ValueError(f"number_places: targets must be (B, T), got shape {tuple(targets.shape)}")
    if targets.dtype != torch.long:
        raise TypeError(f"number_places: targets must be a LongTensor, got {targets.dtype}")
    return places_from_masks(digit_values(targets, vocab) >= 0, dot_mask(targets, vocab))


def places_from_masks(digit: torch.Tensor, dot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`number_places` from the digit and dot masks (BoolTensor (B, T) each).

    A '.' is the span's decimal point when the run of digits right before it reaches back
    to the start of the span (so the span starts with a digit and has no earlier '.').
    Integer places count the digits up to the next barrier (a non-number token or a decimal
    point); decimal places count positions from the decimal point.
    """
    _, t_len = digit.shape
    if t_len == 0:
        empty = torch.full(digit.shape, -1, dtype=torch.long, device=digit.device)
        return empty, empty.clone()
    in_span = digit | dot
    pos = torch.arange(t_len, device=digit.device)  # (T,), broadcast over rows
    # Last non-digit position strictly before t (-1 if none) and whether it is in a span.
    last_non_digit = torch.cummax(torch.where(digit, -1, pos), dim=1).values  # at or before t
    before = F.pad(last_non_digit[:, :-1], (1, 0), value=-1)  # (B, T) strictly before t
    before_in_span = in_span.gather(1, before.clamp_min(0)) & (before >= 0)
    decimal_point = dot & (before < pos - 1) & ~before_in_span  # (B, T)

    # A digit is a decimal digit when its span's decimal point lies after the span's start.
    last_gap = torch.cummax(torch.where(in_span, -1, pos), dim=1).values  # last non-number
    last_point = torch.cummax(torch.where(decimal_point, pos, -1), dim=1).values
    decimal_digit = digit & (last_point > last_gap)
    decimal_place = torch.where(decimal_digit, pos - last_point, -1)

    # Integer place: digits strictly between t and the next barrier at or after t.
    barrier = ~in_span | decimal_point
    next_barrier = torch.cummin(torch.where(barrier, pos, t_len).flip(1), dim=1).values.flip(1)
    digits_before = F.pad(digit.cumsum(1), (1, 0))  # (B, T + 1): digits in [0, j)
    digits_after = digits_before.gather(1, next_barrier) - digits_before[:, 1:]
    integer_place = torch.where(digit & ~decimal_digit, digits_after, -1)
    return integer_place, decimal_place


def place_weights(
    integer_place: torch.Tensor,
    decimal_place: torch.Tensor,
    decay_base: float,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """DEL's position weight u(t) from `number_places` (FloatTensor `dtype`, same shape).

    Integer place i gets 2(i + 1) (linear in the place); decimal place k gets
    decay_base^-(k + 1) (the first '.' holds the exponent -1 slot with weight 0); every
    other position gets 0.
    """
    integer_w = 2.0 * (integer_place + 1).to(dtype)
    decimal_w = torch.pow(float(decay_base), -(decimal_place + 1).to(dtype))
    zero = torch.zeros((), dtype=dtype, device=integer_place.device)
    return torch.where(
        integer_place >= 0, integer_w, torch.where(decimal_place >= 0, decimal_w, zero)
    )
