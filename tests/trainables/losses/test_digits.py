"""Tests for trainables/losses/digits.py: digit values, number places and DEL's place weights."""

from __future__ import annotations

import random

import pytest
import torch

from trainables.losses import NumberVocab
from trainables.losses.digits import digit_values, number_places, place_weights

# Tiny vocabulary: ids 0..9 are the digits, 10 is '.', 11 is any other token.
VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=10)
IGNORE = -100


def encode(text: str) -> list[int]:
    """'.' -> 10, a digit -> itself, '_' -> -100 (ignored), anything else -> 11."""
    out = []
    for ch in text:
        if ch == ".":
            out.append(10)
        elif ch.isdigit():
            out.append(int(ch))
        elif ch == "_":
            out.append(IGNORE)
        else:
            out.append(11)
    return out


def places(text: str, vocab: NumberVocab = VOCAB) -> tuple[list[int], list[int]]:
    integer, decimal = number_places(torch.tensor([encode(text)], dtype=torch.long), vocab)
    return integer[0].tolist(), decimal[0].tolist()


# (text, integer places, decimal places), written out by hand from the span rules.
HAND_PLACES = [
    ("12345", [4, 3, 2, 1, 0], [-1, -1, -1, -1, -1]),
    ("3.14159", [0, -1, -1, -1, -1, -1, -1], [-1, -1, 1, 2, 3, 4, 5]),
    ("100.25", [2, 1, 0, -1, -1, -1], [-1, -1, -1, -1, 1, 2]),
    # trailing '.': all digits are integer places, the '.' is no digit
    ("42.", [1, 0, -1], [-1, -1, -1]),
    # a span starting with '.' is all integer places
    (".5", [-1, 0], [-1, -1]),
    (".25", [-1, 1, 0], [-1, -1, -1]),
    # a later '.' also takes a position: '3' is 3 positions after the first '.'
    ("1.2.3", [0, -1, -1, -1, -1], [-1, -1, 1, -1, 3]),
    # digits only count digits in an all-integer span that starts with '.'
    (".5.3", [-1, 1, -1, 0], [-1, -1, -1, -1]),
    # spans are separated by other tokens and by ignored (-100) targets
    ("x7 12.5 ", [-1, 0, -1, 1, 0, -1, -1, -1], [-1, -1, -1, -1, -1, -1, 1, -1]),
    ("12_34", [1, 0, -1, 1, 0], [-1, -1, -1, -1, -1]),
    ("", [], []),
]


@pytest.mark.parametrize(("text", "integer", "decimal"), HAND_PLACES)
def test_number_places_by_hand(text: str, integer: list[int], decimal: list[int]) -> None:
    assert places(text) == (integer, decimal)


def test_no_dot_token_means_all_integer() -> None:
    no_dot = NumberVocab(digit_ids=list(range(10)), dot_id=None)
    # id 10 is then just another token and splits "3.14" into the integers 3 and 14
    assert places("3.14", no_dot) == ([0, -1, 1, 0], [-1, -1, -1, -1])


def test_spans_never_cross_rows() -> None:
    # row 0 ends with "12", row 1 starts with "3.5": read as one run they would be "123.5"
    targets = torch.tensor([encode("x12"), encode("3.5")])
    integer, decimal = number_places(targets, VOCAB)
    assert integer.tolist() == [[-1, 1, 0], [0, -1, -1]]
    assert decimal.tolist() == [[-1, -1, -1], [-1, -1, 1]]


def test_digit_values_and_ignore_index() -> None:
    # digit ids deliberately not 0..9 and not sorted, so a value is not its id
    vocab = NumberVocab(digit_ids=[20, 21, 22, 23, 24, 25, 26, 27, 29, 28], dot_id=5)
    targets = torch.tensor([[20, 29, 28, -100, 5, 3, 0]])
    assert digit_values(targets, vocab).tolist() == [[0, 8, 9, -1, -1, -1, -1]]
    integer, decimal = number_places(targets, vocab)
    assert integer.tolist() == [[2, 1, 0, -1, -1, -1, -1]]
    assert decimal.tolist() == [[-1] * 7]


def test_place_weights_by_hand() -> None:
    b = 1.02
    cases = {
        # integer place i -> 2 (i + 1)
        "12345": [10.0, 8.0, 6.0, 4.0, 2.0],
        # decimal place k -> b^-(k+1); the '.' itself (the b^-1 slot) weighs 0
        "3.14159": [2.0, 0.0, b**-2, b**-3, b**-4, b**-5, b**-6],
        "100.25": [6.0, 4.0, 2.0, 0.0, b**-2, b**-3],
        "42.": [4.0, 2.0, 0.0],
        ".5": [0.0, 2.0],
        "1.2.3": [2.0, 0.0, b**-2, 0.0, b**-4],
        "a1": [0.0, 2.0],
    }
    for text, expected in cases.items():
        integer, decimal = number_places(torch.tensor([encode(text)]), VOCAB)
        got = place_weights(integer, decimal, decay_base=b)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got[0], torch.tensor(expected), rtol=1e-6, atol=0)


def _reference_places(row: list[int]) -> tuple[list[int], list[int]]:
    """A loop-based reading of the span rules, independent of the vectorised code."""
    n = len(row)
    integer, decimal = [-1] * n, [-1] * n
    t = 0
    while t < n:
        if not (0 <= row[t] <= 10):
            t += 1
            continue
        s = t
        while t < n and 0 <= row[t] <= 10:
            t += 1
        span = row[s:t]
        dots = [j for j, tok in enumerate(span) if tok == 10]
        if dots and span[0] != 10:
            first = dots[0]
            for j in range(first):
                integer[s + j] = first - 1 - j
            for j in range(first + 1, len(span)):
                if span[j] != 10:
                    decimal[s + j] = j - first
        else:
            digits = [j for j, tok in enumerate(span) if tok != 10]
            for rank, j in enumerate(digits):
                integer[s + j] = len(digits) - 1 - rank
    return integer, decimal


def test_number_places_match_loop_reference_on_random_rows() -> None:
    rng = random.Random(0)
    # mostly digits and dots so that long spans with several '.' occur
    alphabet = [*range(10), 10, 10, 10, 11, 11, IGNORE]
    rows = [[rng.choice(alphabet) for _ in range(40)] for _ in range(64)]
    integer, decimal = number_places(torch.tensor(rows), VOCAB)
    for b, row in enumerate(rows):
        ref_integer, ref_decimal = _reference_places(row)
        assert integer[b].tolist() == ref_integer, row
        assert decimal[b].tolist() == ref_decimal, row


def test_number_places_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="targets must be"):
        number_places(torch.tensor([1, 2, 3]), VOCAB)
    with pytest.raises(TypeError, match="LongTensor"):
        number_places(torch.tensor([[1.0, 2.0]]), VOCAB)
