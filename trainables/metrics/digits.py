"""Teacher-forced digit metrics at the positions whose next token is a digit: the entropy of the
model's 10-way digit distribution, digit accuracy, and accuracy per integer and decimal place.

"Accuracy" is the teacher-forced argmax over the whole vocabulary: a position counts as right only
when the model's top token is the correct digit (a non-digit top token is wrong). The entropy is
of the softmax over the ten digit logits alone, in nats (at most log 10 ≈ 2.3026).
Places come from `trainables.losses.digits.number_places` (0 = units, 1 = tens, …; decimal place
1 = first after the point), so the metrics and the digit losses agree on what a place is.
"""

from __future__ import annotations

import torch

from records.metric_names import MAX_PLACE
from trainables.losses.digits import number_places
from trainables.losses.vocab import NumberVocab
from trainables.metrics.distributed import sum_across_ranks
from trainables.metrics.shift import shift_for_next_token


class DigitMetrics:
    """Accumulates digit metrics over an evaluation set; memory is a fixed vector of sums.

    `update(logits (B, T, V), labels (B, T))`: Hugging Face causal-LM convention (the shift
    happens here, −100 is ignored). `compute()` returns digit_entropy, digit_acc, digit_acc_int,
    digit_acc_dec, digit_acc_int_0 … digit_acc_int_{max_place−1}, digit_acc_dec_1 …
    digit_acc_dec_{max_place} (NaN where no position of that kind was seen) and n_digits. Integer
    places at or above `max_place` count towards digit_acc_int but have no key of their own.
    """

    def __init__(self, vocab: NumberVocab, max_place: int = MAX_PLACE) -> None:
        if not isinstance(vocab, NumberVocab):
            raise TypeError(f"vocab must be a NumberVocab, got {type(vocab).__name__}")
        if max_place < 1:
            raise ValueError(f"max_place must be >= 1, got {max_place}")
        self.vocab = vocab
        self.max_place = max_place
        # Layout of the float64 sum vector; per-place blocks have max_place + 1 bins, the last
        # bin collecting the places beyond max_place.
        self._scalars = ["n", "entropy", "correct", "n_int", "correct_int", "n_dec", "correct_dec"]
        n_bins = max_place + 1
        self._int_n = len(self._scalars)
        self._int_correct = self._int_n + n_bins
        self._dec_n = self._int_correct + n_bins
        self._dec_correct = self._dec_n + n_bins
        self._sums = torch.zeros(self._dec_correct + n_bins, dtype=torch.float64)

    def _add_places(self, start: int, places: torch.Tensor, weights: torch.Tensor) -> None:
        # places (n,) >= 0, weights (n,) float64 -> histogram over max_place + 1 bins.
        bins = places.clamp(max=self.max_place)
        hist = torch.bincount(bins, weights=weights, minlength=self.max_place + 1)
        self._sums[start : start + self.max_place + 1] += hist.double().cpu()

    @torch.no_grad()
    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        logits, targets = shift_for_next_token(logits, labels)  # (B, T−1, V), (B, T−1)
        if self.vocab.max_id >= logits.shape[-1]:
            raise ValueError(
                f"NumberVocab id {self.vocab.max_id} is outside the logits' vocabulary of "
                f"size {logits.shape[-1]}"
            )
        digit_ids = self.vocab.digit_id_tensor(logits.device)  # (10,)
        is_digit = torch.isin(targets, digit_ids)  # (B, T−1)
        int_place, dec_place = number_places(targets, self.vocab)  # (B, T−1) each, −1 = none
        rows = logits[is_digit]  # (n, V)
        if rows.shape[0] == 0:
            return
        target = targets[is_digit]  # (n,)
        int_place, dec_place = int_place[is_digit], dec_place[is_digit]  # (n,)
        digit_probs = torch.softmax(rows[:, digit_ids].float(), dim=-1)  # (n, 10)
        # entr(p) = −p log p with entr(0) = 0, so −inf digit logits give no NaN.
        entropy = torch.special.entr(digit_probs).sum(dim=-1).double()  # (n,)
        correct = (rows.argmax(dim=-1) == target).double()  # (n,)
        is_int, is_dec = int_place >= 0, dec_place >= 1
        scalars = torch.stack(  # one device-to-host copy for the seven scalar sums
            [
                torch.ones_like(correct).sum(),
                entropy.sum(),
                correct.sum(),
                is_int.double().sum(),
                correct[is_int].sum(),
                is_dec.double().sum(),
                correct[is_dec].sum(),
            ]
        )
        self._sums[: len(self._scalars)] += scalars.cpu()
        ones = torch.ones_like(correct)
        self._add_places(self._int_n, int_place[is_int], ones[is_int])
        self._add_places(self._int_correct, int_place[is_int], correct[is_int])
        # Decimal places start at 1; shift to 0-based bins.
        self._add_places(self._dec_n, dec_place[is_dec] - 1, ones[is_dec])
        self._add_places(self._dec_correct, dec_place[is_dec] - 1, correct[is_dec])

    def all_reduce(self) -> None:
        """Sum the accumulators over torch.distributed ranks when it is initialised; a no-op
        otherwise. Every rank must call it; it replaces the local sums with the global ones, so
        call it once, after the last update."""
        self._sums = sum_across_ranks(self._sums)

    def state(self) -> torch.Tensor:
        """The float64 sum vector (counts and sums; see the layout in `__init__`)."""
        return self._sums

    def compute(self) -> dict[str, float]:
        s = self._sums.tolist()

        def ratio(num: float, den: float) -> float:
            return num / den if den else float("nan")

        n, entropy, correct, n_int, correct_int, n_dec, correct_dec = s[: len(self._scalars)]
        result = {
            "digit_entropy": ratio(entropy, n),
            "digit_acc": ratio(correct, n),
            "digit_acc_int": ratio(correct_int, n_int),
            "digit_acc_dec": ratio(correct_dec, n_dec),
        }
        for k in range(self.max_place):
            result[f"digit_acc_int_{k}"] = ratio(s[self._int_correct + k], s[self._int_n + k])
        for k in range(self.max_place):
            result[f"digit_acc_dec_{k + 1}"] = ratio(s[self._dec_correct + k], s[self._dec_n + k])
        result["n_digits"] = n
        return result
