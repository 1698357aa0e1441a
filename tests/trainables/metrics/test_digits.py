"""DigitMetrics: hand-derived values on a tiny vocabulary and a slow loop implementation."""

from __future__ import annotations

import math

import pytest
import torch

from trainables.losses.vocab import NumberVocab
from trainables.metrics import DigitMetrics

# Tiny vocabulary: ids 0..9 are the digits '0'..'9', 10 is '.', 11 is a word token.
DOT, WORD = 10, 11
VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=DOT)
NEG_INF = float("-inf")


def entropy(probs: list[float]) -> float:
    return -sum(p * math.log(p) for p in probs if p > 0)


def test_golden_values_by_hand() -> None:
    # Row 0 reads "1.5": labels [w, 1, ., 5, w] -> shifted targets [1, ., 5, w].
    #   t=0 target '1' (integer place 0): digit logits all 0 (uniform, entropy log 10) but
    #       the word token has logit 5, so the argmax is wrong.
    #   t=2 target '5' (decimal place 1): digit '5' logit log 3, '6' logit 0, other digits
    #       −inf -> digit distribution (3/4, 1/4), argmax '5' right.
    # Row 1 reads "23": labels [w, 2, 3, w, w] -> targets [2, 3, w, w].
    #   t=0 target '2' (integer place 1): '2' logit 1, other digits 0 -> argmax right,
    #       probabilities e/(e+9) and 1/(e+9) nine times.
    #   t=1 target '3' (integer place 0): '7' logit 2, others 0 -> argmax '7', wrong.
    logits = torch.zeros(2, 5, 12)
    logits[0, 0, WORD] = 5.0
    logits[0, 2, :10] = NEG_INF
    logits[0, 2, 5], logits[0, 2, 6] = math.log(3.0), 0.0
    logits[0, 2, WORD] = -1.0
    logits[1, 0, 2] = 1.0
    logits[1, 0, WORD] = -1.0
    logits[1, 1, 7] = 2.0
    labels = torch.tensor([[WORD, 1, DOT, 5, WORD], [WORD, 2, 3, WORD, WORD]])
    dm = DigitMetrics(VOCAB, max_place=3)
    dm.update(logits, labels)
    got = dm.compute()

    e = math.e
    h = [
        math.log(10.0),
        entropy([3 / 4, 1 / 4]),
        entropy([e / (e + 9)] + [1 / (e + 9)] * 9),
        entropy([e**2 / (e**2 + 9)] + [1 / (e**2 + 9)] * 9),
    ]
    assert got["n_digits"] == 4.0
    assert got["digit_entropy"] == pytest.approx(sum(h) / 4, abs=1e-6)
    assert got["digit_acc"] == pytest.approx(2 / 4)  # right: row 0 t=2, row 1 t=0
    assert got["digit_acc_int"] == pytest.approx(1 / 3)  # integer digits: 1, 2, 3
    assert got["digit_acc_dec"] == 1.0
    assert got["digit_acc_int_0"] == 0.0  # '1' (wrong) and '3' (wrong)
    assert got["digit_acc_int_1"] == 1.0  # '2'
    assert math.isnan(got["digit_acc_int_2"])
    assert got["digit_acc_dec_1"] == 1.0
    assert math.isnan(got["digit_acc_dec_2"]) and math.isnan(got["digit_acc_dec_3"])
    assert set(got) == {
        "digit_entropy",
        "digit_acc",
        "digit_acc_int",
        "digit_acc_dec",
        "digit_acc_int_0",
        "digit_acc_int_1",
        "digit_acc_int_2",
        "digit_acc_dec_1",
        "digit_acc_dec_2",
        "digit_acc_dec_3",
        "n_digits",
    }


def simple_places(targets: list[int]) -> list[tuple[int, int]]:
    """(integer place, decimal place) per target for runs of digits with at most one '.' not at
    the start of the run, by walking the run by hand."""
    places = [(-1, -1)] * len(targets)
    t = 0
    while t < len(targets):
        if targets[t] not in range(10):
            t += 1
            continue
        end = t
        while end < len(targets) and (targets[end] in range(10) or targets[end] == DOT):
            end += 1
        run = targets[t:end]
        dot = run.index(DOT) if DOT in run else len(run)
        for k in range(dot):
            places[t + k] = (dot - 1 - k, -1)
        for k in range(dot + 1, len(run)):
            places[t + k] = (-1, k - dot)
        t = end
    return places


def random_number_batch(b: int, t: int, seed: int) -> torch.Tensor:
    """Labels made of words and numbers like 407, 3.25, 12.5 (at most one '.')."""
    rng = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(b):
        row: list[int] = []
        while len(row) < t:
            row.append(WORD)
            n_int = int(torch.randint(1, 7, (1,), generator=rng))
            n_dec = int(torch.randint(0, 4, (1,), generator=rng))
            row += torch.randint(0, 10, (n_int,), generator=rng).tolist()
            if n_dec:
                row += [DOT, *torch.randint(0, 10, (n_dec,), generator=rng).tolist()]
        rows.append(row[:t])
    labels = torch.tensor(rows)
    labels[torch.rand(b, t, generator=rng) < 0.1] = -100
    return labels


def slow_digit_metrics(
    logits: list[torch.Tensor], labels: list[torch.Tensor], max_place: int
) -> dict[str, float]:
    sums: dict[str, list[float]] = {}

    def add(key: str, right: bool) -> None:
        sums.setdefault(key, [0.0, 0.0])
        sums[key][0] += right
        sums[key][1] += 1

    entropies = []
    for lg, lb in zip(logits, labels, strict=True):
        for b in range(lb.shape[0]):
            targets = lb[b, 1:].tolist()
            places = simple_places(targets)
            for t, y in enumerate(targets):
                if y not in range(10):
                    continue
                row = lg[b, t].tolist()
                digit_row = row[:10]
                top = max(digit_row)
                weights = [math.exp(x - top) for x in digit_row]
                entropies.append(entropy([w / sum(weights) for w in weights]))
                right = max(range(len(row)), key=lambda v, row=row: row[v]) == y
                add("digit_acc", right)
                int_place, dec_place = places[t]
                if int_place >= 0:
                    add("digit_acc_int", right)
                    if int_place < max_place:
                        add(f"digit_acc_int_{int_place}", right)
                if dec_place >= 1:
                    add("digit_acc_dec", right)
                    if dec_place <= max_place:
                        add(f"digit_acc_dec_{dec_place}", right)
    result = {key: right / n for key, (right, n) in sums.items()}
    result["digit_entropy"] = sum(entropies) / len(entropies)
    result["n_digits"] = float(len(entropies))
    return result


def test_matches_slow_implementation() -> None:
    gen = torch.Generator().manual_seed(0)
    labels = [random_number_batch(3, 30, seed=1), random_number_batch(2, 17, seed=2)]
    logits = [torch.randn(*lb.shape, 12, generator=gen) * 2 for lb in labels]
    dm = DigitMetrics(VOCAB, max_place=4)
    for lg, lb in zip(logits, labels, strict=True):
        dm.update(lg, lb)
    got, want = dm.compute(), slow_digit_metrics(logits, labels, max_place=4)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-6), key
    # Places no position reached are NaN, not 0.
    for key in set(got) - set(want):
        assert math.isnan(got[key]), key


def test_no_digits_gives_nan_and_zero_count() -> None:
    dm = DigitMetrics(VOCAB)
    dm.update(torch.randn(1, 4, 12), torch.tensor([[WORD, WORD, DOT, -100]]))
    got = dm.compute()
    assert got["n_digits"] == 0.0
    assert math.isnan(got["digit_acc"]) and math.isnan(got["digit_entropy"])
    assert len(got) == 4 + 8 + 8 + 1  # default max_place 8: int 0..7, dec 1..8


def test_bfloat16_logits() -> None:
    labels = random_number_batch(2, 20, seed=4)
    logits = torch.randn(2, 20, 12, generator=torch.Generator().manual_seed(4))
    full, half = DigitMetrics(VOCAB), DigitMetrics(VOCAB)
    full.update(logits.to(torch.bfloat16).float(), labels)
    half.update(logits.to(torch.bfloat16), labels)
    for key, value in full.compute().items():
        assert half.compute()[key] == pytest.approx(value, abs=1e-6, nan_ok=True), key


def test_bad_input_raises_clear_errors() -> None:
    with pytest.raises(TypeError, match="NumberVocab"):
        DigitMetrics([0, 1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_place"):
        DigitMetrics(VOCAB, max_place=0)
    dm = DigitMetrics(VOCAB)
    with pytest.raises(ValueError, match="outside the logits' vocabulary of size 8"):
        dm.update(torch.zeros(1, 3, 8), torch.zeros(1, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"logits must be \(B, T, V\)"):
        dm.update(torch.zeros(3, 12), torch.zeros(3, dtype=torch.long))
