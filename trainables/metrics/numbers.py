"""Numbers in generated text: find the final number of an answer, compare numbers with a
tolerance, score a set of generated answers against references, and per-place digit accuracy of
a generated number against its reference.

This module uses no torch (`PlaceAccuracy.all_reduce` imports it only when called); benchmark
answer extraction reuses the parser.

Parsing choices (documented because every benchmark harness makes them differently):
- thousands separators are removed only in well-formed groups ("1,000", "12,345.5"); "1,2,3" is a
  list and its final number is 3;
- a "-" (or the Unicode minus "−") is a sign only when it does not follow a letter, digit or
  closing bracket, so "10-5" ends with 5 but "x = -5" ends with -5; "$" may sit between the sign
  and the digits ("-$12", "$-12");
- "12." is 12 (a sentence full stop), ".5" is 0.5, "1.5e-3" is 0.0015; a number never starts
  right after a digit or ".", so "version 1.2.3" ends with 1.2;
- simple fractions "3/4" (integer numerator and denominator, no spaces) and LaTeX
  "\\frac{3}{4}" / "\\dfrac" / "\\tfrac" with plain-number arguments are single numbers; a zero
  denominator makes the final number valueless (None);
- a percent sign is ignored ("50%" is 50): GSM8K-style references state percentages as the bare
  number;
- mixed numbers ("1 1/2") are two numbers, so the final one is 1/2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation

from records.metric_names import MAX_PLACE

# An unsigned decimal literal. Comma groups must be complete ("1,000" but not "1,00") and are
# tried first so "1,000" is one number; the exponent needs digits so "3eggs" stays 3.
_UNSIGNED = r"(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+(?!\w))?"
_NUMBER_RE = re.compile(
    rf"\\[dt]?frac\s*\{{\s*(?P<fnum>[-+−]?{_UNSIGNED})\s*\}}\s*\{{\s*(?P<fden>[-+−]?{_UNSIGNED})\s*\}}"
    rf"|(?<![\d.])(?P<num>{_UNSIGNED})(?:/(?P<den>\d+)(?![\d.,]))?"
)
# A whole string that is one number, e.g. "-1,000", "$12", "\\frac{3}{4}", "50\\%".
_FULL_RE = re.compile(
    rf"\s*(?P<sign>[-+−]?)\s*(?:\\?\$)?\s*(?P<body>{_NUMBER_RE.pattern})\s*(?:\\?%)?\s*"
)
_MINUS = ("-", "−")
# Characters after which a "-" is subtraction (or a range), not a sign.
_NOT_A_SIGN_AFTER = ")]}."
# Enough precision for fractions such as 1/3 to reach every digit place we report.
_FRACTION_CONTEXT = Context(prec=40)


@dataclass(frozen=True)
class ParsedNumber:
    """One number found in text."""

    literal: str
    """The number as written, normalised: commas and a "+" sign removed, a leading "-" for
    negatives, fractions as "3/4" (so "\\frac{3}{4}" becomes "3/4")."""
    value: Decimal | None
    """The exact decimal value (fractions to 40 significant digits); None for a zero
    denominator."""

    @property
    def float_value(self) -> float | None:
        return None if self.value is None else float(self.value)


def _clean(unsigned: str) -> str:
    return unsigned.replace(",", "")


def _signed_literal(text: str) -> tuple[bool, str]:
    """Split an optional leading sign off a fraction argument like "-3" -> (True, "3")."""
    if text and text[0] in _MINUS:
        return True, _clean(text[1:])
    if text.startswith("+"):
        return False, _clean(text[1:])
    return False, _clean(text)


def _fraction(num_neg: bool, num: str, den_neg: bool, den: str) -> tuple[bool, str, Decimal | None]:
    negative = num_neg != den_neg
    den_value = Decimal(den)
    value = None if den_value == 0 else _FRACTION_CONTEXT.divide(Decimal(num), den_value)
    return negative, f"{num}/{den}", value


def _match_number(match: re.Match[str]) -> tuple[bool, str, Decimal | None]:
    """(negative inside the match, unsigned literal, unsigned value) of one `_NUMBER_RE` match."""
    if match.group("fnum") is not None:
        num_neg, num = _signed_literal(match.group("fnum"))
        den_neg, den = _signed_literal(match.group("fden"))
        return _fraction(num_neg, num, den_neg, den)
    num = _clean(match.group("num"))
    if match.group("den") is not None:
        return _fraction(False, num, False, match.group("den"))
    return False, num, Decimal(num)


def _has_sign_before(text: str, start: int) -> bool:
    """Whether a minus sign written before position `start` belongs to the number there."""
    pos = start
    if pos > 0 and text[pos - 1] == "$":
        pos -= 1  # "-$12"
    if pos == 0 or text[pos - 1] not in _MINUS:
        return False
    before = text[pos - 2] if pos >= 2 else ""
    if before == "$" and pos >= 3:
        before = text[pos - 3]  # "$-12" reads like "-12"
    return not (before.isalnum() or (before != "" and before in _NOT_A_SIGN_AFTER))


def _build(negative: bool, literal: str, value: Decimal | None) -> ParsedNumber:
    if negative:
        literal = "-" + literal
        value = None if value is None else -value
    return ParsedNumber(literal=literal, value=value)


def find_numbers(text: str) -> list[ParsedNumber]:
    """Every number in `text`, in order (see the module docstring for what counts)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    numbers = []
    for match in _NUMBER_RE.finditer(text):
        negative, literal, value = _match_number(match)
        if _has_sign_before(text, match.start()):
            negative = not negative
        numbers.append(_build(negative, literal, value))
    return numbers


def find_final_number(text: str) -> ParsedNumber | None:
    """The last number in `text`, or None."""
    numbers = find_numbers(text)
    return numbers[-1] if numbers else None


def parse_final_number(text: str) -> float | None:
    """The value of the last number in `text` as a float; None when there is none (or it is a
    fraction with a zero denominator)."""
    found = find_final_number(text)
    return None if found is None else found.float_value


def parse_number(text: str) -> ParsedNumber | None:
    """`text` as one number when the whole string is a number ("-1,000", "$12", "3/4",
    "\\frac{3}{4}", "50%", surrounding spaces allowed), else None. Stricter than
    `find_final_number`: "x = 5" is not a number."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    full = _FULL_RE.fullmatch(text)
    if full is None:
        return None
    inner = _NUMBER_RE.fullmatch(full.group("body"))
    if inner is None:  # the body pattern is _NUMBER_RE itself, so this cannot fail
        return None
    negative, literal, value = _match_number(inner)
    if full.group("sign") in _MINUS:
        negative = not negative
    return _build(negative, literal, value)


def numbers_match(prediction: float, reference: float, rel_tol: float = 1e-6) -> bool:
    """Numeric equality with a small tolerance: |a − b| <= rel_tol · max(1, |b|). The floor of 1
    makes the tolerance absolute near zero, so 1e-9 matches 0."""
    if math.isnan(prediction) or math.isnan(reference):
        return False
    if math.isinf(prediction) or math.isinf(reference):
        return prediction == reference
    return abs(prediction - reference) <= rel_tol * max(1.0, abs(reference))


def _reference_value(reference: float | str | None, index: int) -> float | None:
    if reference is None:
        return None
    if isinstance(reference, bool):
        raise TypeError(f"references[{index}] is a bool; pass a number, a string or None")
    if isinstance(reference, int | float):
        value = float(reference)
        return value if math.isfinite(value) else None  # NaN / inf: no usable reference
    if isinstance(reference, str):
        parsed = parse_number(reference)
        return None if parsed is None else parsed.float_value
    raise TypeError(
        f"references[{index}] must be a float, str or None, got {type(reference).__name__}"
    )


def score_numbers(
    predictions: Sequence[str],
    references: Sequence[float | str | None],
    rel_tol: float = 1e-6,
) -> dict[str, float]:
    """Score generated answers against numeric references.

    A reference that is None, NaN or infinite, or a string that is not one number (see
    `parse_number`), is not numeric and its row is left out of every score. Over the remaining
    ("scored") rows:
    - `exact_match`: share where the final number of the prediction matches the reference
      (`numbers_match`); a prediction without a number counts as wrong;
    - `parsed`: share of predictions with a final number;
    - `mae`: mean |prediction − reference| over the parsed pairs;
    - `rel_error`: mean |prediction − reference| / |reference| over the parsed pairs whose
      reference is not 0 (a zero reference has no relative error);
    - `log_error`: mean log10(1 + |prediction − reference|) over the parsed pairs: how many
      orders of magnitude off, robust where MAE is ruled by one far-off answer to a big number;
    - `n`: all rows, `n_scored`: rows with a numeric reference.
    Means over no rows are NaN.
    """
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("predictions and references must be sequences, not a single str")
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions and references differ in length: {len(predictions)} != {len(references)}"
        )
    n_scored = n_parsed = n_exact = n_rel = 0
    abs_sum = rel_sum = log_sum = 0.0
    for i, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        if not isinstance(prediction, str):
            raise TypeError(f"predictions[{i}] must be a str, got {type(prediction).__name__}")
        ref = _reference_value(reference, i)
        if ref is None:
            continue
        n_scored += 1
        pred = parse_final_number(prediction)
        if pred is None:
            continue
        n_parsed += 1
        n_exact += numbers_match(pred, ref, rel_tol)
        err = abs(pred - ref)
        abs_sum += err
        log_sum += math.log10(1.0 + err)
        if ref != 0:
            n_rel += 1
            rel_sum += err / abs(ref)
    nan = float("nan")
    return {
        "n": float(len(predictions)),
        "n_scored": float(n_scored),
        "parsed": n_parsed / n_scored if n_scored else nan,
        "exact_match": n_exact / n_scored if n_scored else nan,
        "mae": abs_sum / n_parsed if n_parsed else nan,
        "rel_error": rel_sum / n_rel if n_rel else nan,
        "log_error": log_sum / n_parsed if n_parsed else nan,
    }


def _as_decimal(value: float | str | Decimal | ParsedNumber, what: str) -> Decimal | None:
    """A prediction or reference as a finite Decimal: strings through their final number,
    floats through their shortest repr (so 0.1 is 0.1, not its binary expansion)."""
    if isinstance(value, ParsedNumber):
        result = value.value
    elif isinstance(value, Decimal):
        result = value
    elif isinstance(value, bool):
        raise TypeError(f"{what} is a bool; pass a number or a str")
    elif isinstance(value, int | float):
        try:
            result = Decimal(repr(value))
        except InvalidOperation:  # pragma: no cover - repr of a float always parses
            result = None
    elif isinstance(value, str):
        found = find_final_number(value)
        result = None if found is None else found.value
    else:
        raise TypeError(f"{what} must be a float, str or Decimal, got {type(value).__name__}")
    if result is None or not result.is_finite():
        return None
    return result


def digit_places(value: Decimal) -> tuple[str, str]:
    """(integer digits, decimal digits) of |value| in plain notation without redundant zeros:
    Decimal("-1200.50") -> ("1200", "5"); Decimal("0.05") -> ("0", "05")."""
    text = format(abs(value).normalize(), "f")
    integer, _, decimals = text.partition(".")
    return integer, decimals


def place_accuracy(
    prediction: float | str | Decimal | ParsedNumber,
    reference: float | str | Decimal | ParsedNumber,
    max_place: int = MAX_PLACE,
) -> dict[str, float]:
    """Per-place digit correctness of one generated number against its reference.

    Integer places are aligned from the units digit (`int_0` = units, `int_1` = tens, …) and
    decimal places from the point (`dec_1` = tenths, …). Places are scored over the union of the
    places either number writes, a missing place reading as 0 (a leading or trailing zero), so a
    prediction with extra digits is wrong at those places. The sign is not scored. A string is
    read through its final number. Returns {"int_0": 1.0 or 0.0, …, "dec_1": …} for the scored
    places below `max_place` (integer places 0 … max_place−1, decimal places 1 … max_place); when
    the prediction has no number every reference place is 0.0; an empty dict when the reference
    has no finite number.
    """
    if max_place < 1:
        raise ValueError(f"max_place must be >= 1, got {max_place}")
    ref = _as_decimal(reference, "reference")
    if ref is None:
        return {}
    ref_int, ref_dec = digit_places(ref)
    pred = _as_decimal(prediction, "prediction")
    if pred is None:
        # No number generated: every place the reference writes is wrong.
        scores = {f"int_{k}": 0.0 for k in range(min(len(ref_int), max_place))}
        scores.update({f"dec_{k}": 0.0 for k in range(1, min(len(ref_dec), max_place) + 1)})
        return scores
    pred_int, pred_dec = digit_places(pred)
    n_int = min(max(len(ref_int), len(pred_int)), max_place)
    n_dec = min(max(len(ref_dec), len(pred_dec)), max_place)
    # Right-align integer digits (units first) and left-align decimals; pad with zeros.
    ref_int_r, pred_int_r = ref_int[::-1].ljust(n_int, "0"), pred_int[::-1].ljust(n_int, "0")
    ref_dec_p, pred_dec_p = ref_dec.ljust(n_dec, "0"), pred_dec.ljust(n_dec, "0")
    scores = {f"int_{k}": float(ref_int_r[k] == pred_int_r[k]) for k in range(n_int)}
    scores.update({f"dec_{k + 1}": float(ref_dec_p[k] == pred_dec_p[k]) for k in range(n_dec)})
    return scores


class PlaceAccuracy:
    """Accumulates `place_accuracy` over many generated answers: per place, the share of scored
    pairs whose digit at that place is right. `compute()` always returns every key
    `place_acc_int_0 … place_acc_int_{max_place-1}`, `place_acc_dec_1 … place_acc_dec_{max_place}`
    (NaN for a place no pair wrote) plus `place_n` (pairs with a numeric reference)."""

    def __init__(self, max_place: int = MAX_PLACE) -> None:
        if max_place < 1:
            raise ValueError(f"max_place must be >= 1, got {max_place}")
        self.max_place = max_place
        self.keys = [f"int_{k}" for k in range(max_place)] + [
            f"dec_{k}" for k in range(1, max_place + 1)
        ]
        self.correct = dict.fromkeys(self.keys, 0.0)
        self.count = dict.fromkeys(self.keys, 0.0)
        self.n_pairs = 0.0

    def update(
        self,
        prediction: float | str | Decimal | ParsedNumber,
        reference: float | str | Decimal | ParsedNumber | None,
    ) -> None:
        ref = None if reference is None else _as_decimal(reference, "reference")
        if ref is None:
            return  # no numeric reference: nothing to score
        scores = place_accuracy(prediction, ref, self.max_place)
        self.n_pairs += 1
        for key, value in scores.items():
            self.correct[key] += value
            self.count[key] += 1

    def state(self) -> list[float]:
        """The accumulators as one flat list (for summing across processes)."""
        return [self.n_pairs, *self.correct.values(), *self.count.values()]

    def load_state(self, state: Sequence[float]) -> None:
        expected = 1 + 2 * len(self.keys)
        if len(state) != expected:
            raise ValueError(f"state has {len(state)} values, expected {expected}")
        self.n_pairs = float(state[0])
        n = len(self.keys)
        self.correct = dict(zip(self.keys, map(float, state[1 : 1 + n]), strict=True))
        self.count = dict(zip(self.keys, map(float, state[1 + n :]), strict=True))

    def all_reduce(self) -> None:
        """Sum the accumulators over torch.distributed ranks when it is initialised (every rank
        must call it); a no-op otherwise. Replaces the local sums with the global ones."""
        from trainables.metrics.distributed import sum_across_ranks  # torch only when asked

        self.load_state(sum_across_ranks(self.state()))

    def compute(self) -> dict[str, float]:
        result = {"place_n": self.n_pairs}
        for key in self.keys:
            count = self.count[key]
            result[f"place_acc_{key}"] = self.correct[key] / count if count else float("nan")
        return result
