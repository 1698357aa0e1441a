"""Number metrics on generated text: final-number parsing, exact match / errors, and per-place
digit accuracy of generated numbers."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from trainables.metrics import (
    PlaceAccuracy,
    find_final_number,
    numbers_match,
    parse_final_number,
    parse_number,
    place_accuracy,
    score_numbers,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The answer is 42", 42.0),
        ("She pays 1,000 dollars", 1000.0),
        ("total: 1,234,567.25.", 1234567.25),
        ("It costs $12", 12.0),
        ("It costs -$12", -12.0),
        ("balance $-12", -12.0),
        ("x = -5", -5.0),
        ("−7", -7.0),  # Unicode minus
        ("10-5", 5.0),  # subtraction, not a sign
        ("The result is 12.", 12.0),
        ("-1.5", -1.5),
        ("about .5 of it", 0.5),
        ("3/4", 0.75),
        ("-3/4", -0.75),
        ("\\frac{3}{4}", 0.75),
        ("x = -\\dfrac{1}{8}", -0.125),
        ("\\tfrac{-3}{4}", -0.75),
        ("1.5e-3", 0.0015),
        ("50%", 50.0),
        ("1, 2, 3", 3.0),
        ("1,2,3", 3.0),
        ("3eggs", 3.0),
        ("1 1/2", 0.5),  # mixed numbers are two numbers
        ("the 12/25/2023 batch", 2023.0),
        ("version 1.2.3", 1.2),
        ("So (-4) is it", -4.0),
    ],
)
def test_parse_final_number(text: str, value: float) -> None:
    assert parse_final_number(text) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("text", ["", "no digits here", "x/y", "1/0"])
def test_parse_final_number_none(text: str) -> None:
    assert parse_final_number(text) is None


def test_final_number_literal_keeps_the_written_digits() -> None:
    found = find_final_number("paid $1,234.50 in total")
    assert found is not None
    assert found.literal == "1234.50" and found.value == Decimal("1234.50")
    frac = find_final_number("y = -\\frac{2}{3}")
    assert frac is not None and frac.literal == "-2/3"
    assert frac.value is not None and abs(frac.value + Decimal(2) / Decimal(3)) < Decimal("1e-30")


@pytest.mark.parametrize(
    ("text", "value"),
    [("-1,000", -1000.0), (" $12 ", 12.0), ("3/4", 0.75), ("\\frac{3}{4}", 0.75), ("50\\%", 50.0)],
)
def test_parse_number_whole_string(text: str, value: float) -> None:
    parsed = parse_number(text)
    assert parsed is not None and parsed.float_value == value


@pytest.mark.parametrize("text", ["x = 5", "p - q", "5 apples", "2\\sqrt{3}", ""])
def test_parse_number_rejects_expressions(text: str) -> None:
    assert parse_number(text) is None


def test_numbers_match_tolerance() -> None:
    # |a − b| <= 1e-6 · max(1, |b|)
    assert numbers_match(1000.0005, 1000.0)  # 5e-4 <= 1e-3
    assert not numbers_match(1000.002, 1000.0)  # 2e-3 > 1e-3
    assert numbers_match(5e-7, 0.0)  # absolute near zero
    assert not numbers_match(2e-6, 0.0)
    assert not numbers_match(float("nan"), float("nan"))


def test_score_numbers_golden() -> None:
    predictions = ["The answer is 5.", "I don't know", "10.5", "so 0.001", "any 7", "-2"]
    references: list[float | str | None] = [5, 3.0, "10", 0.0, None, "x+1"]
    got = score_numbers(predictions, references)
    # Rows 4 (None) and 5 ("x+1" is not a number) are not scored: 4 scored rows.
    # Parsed: 5, 10.5, 0.001 (row 1 has no number) -> 3/4.
    # Exact: only row 0 -> 1/4.
    # MAE over parsed pairs: (0 + 0.5 + 0.001) / 3.
    # Relative error over parsed pairs with a non-zero reference: (0/5 + 0.5/10) / 2.
    # Log-error over parsed pairs: (log10(1) + log10(1.5) + log10(1.001)) / 3.
    assert got == {
        "n": 6.0,
        "n_scored": 4.0,
        "parsed": 0.75,
        "exact_match": 0.25,
        "mae": pytest.approx((0 + 0.5 + 0.001) / 3),
        "rel_error": pytest.approx((0 / 5 + 0.5 / 10) / 2),
        "log_error": pytest.approx((0.0 + 0.17609125905568124 + 0.0004340774793185929) / 3),
    }


def test_score_numbers_empty_and_errors() -> None:
    got = score_numbers([], [])
    assert got["n"] == 0.0 and math.isnan(got["exact_match"]) and math.isnan(got["mae"])
    with pytest.raises(ValueError, match="differ in length: 2 != 1"):
        score_numbers(["1", "2"], [1.0])
    with pytest.raises(TypeError, match=r"references\[0\]"):
        score_numbers(["1"], [[1]])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"predictions\[1\]"):
        score_numbers(["1", 2], [1.0, 2.0])  # type: ignore[list-item]


def test_place_accuracy_aligns_units_and_point() -> None:
    # 1234.56 vs 1284.5: integer places from the units (4|4, 3|8, 2|2, 1|1), decimals from the
    # point (5|5, 6|0 — the reference has no second decimal, read as 0).
    assert place_accuracy("1234.56", 1284.5) == {
        "int_0": 1.0,
        "int_1": 0.0,
        "int_2": 1.0,
        "int_3": 1.0,
        "dec_1": 1.0,
        "dec_2": 0.0,
    }
    # Extra leading digits are wrong at their places: 12345 vs 345.
    assert place_accuracy("12345", "345") == {
        "int_0": 1.0,
        "int_1": 1.0,
        "int_2": 1.0,
        "int_3": 0.0,
        "int_4": 0.0,
    }
    # Floats go through their repr: 0.1 is "0.1", not its binary expansion; the sign is ignored.
    assert place_accuracy(-0.1, 0.1) == {"int_0": 1.0, "dec_1": 1.0}
    # No number generated: every reference place is wrong.
    assert place_accuracy("no idea", "20.5") == {"int_0": 0.0, "int_1": 0.0, "dec_1": 0.0}
    assert place_accuracy("5", "n/a") == {}
    # max_place cuts the reported places.
    assert set(place_accuracy("123456", "123456", max_place=2)) == {"int_0", "int_1"}


def test_place_accuracy_accumulator() -> None:
    acc = PlaceAccuracy(max_place=3)
    acc.update("The answer is 12.5", 12.5)  # int_0, int_1, dec_1 right
    acc.update("7", "17")  # int_0 right, int_1 wrong (0 vs 1)
    acc.update("nothing", 3)  # int_0 wrong
    acc.update("9", None)  # no reference: skipped
    got = acc.compute()
    assert got["place_n"] == 3.0
    assert got["place_acc_int_0"] == pytest.approx(2 / 3)
    assert got["place_acc_int_1"] == pytest.approx(1 / 2)
    assert got["place_acc_dec_1"] == 1.0
    assert math.isnan(got["place_acc_int_2"]) and math.isnan(got["place_acc_dec_3"])
    # state() / load_state() round trip (what all_reduce sums across ranks).
    other = PlaceAccuracy(max_place=3)
    other.load_state(acc.state())
    assert other.compute().keys() == got.keys()
    with pytest.raises(ValueError, match="state has 2 values"):
        other.load_state([1.0, 2.0])
