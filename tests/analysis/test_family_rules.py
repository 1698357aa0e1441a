"""The named verdict rules (analysis/family_rules.py): intersection–union (every component at
raw p < α, no correction) and "any of" (Holm), on hand-made components whose Holm p-values are
derived by hand in the test; arms against a baseline by those rules (`compare_arms`); and one
estimate's predicted sign judged by its interval."""

from __future__ import annotations

import pytest

from analysis.family_rules import (
    ALL_OF,
    ANY_OF,
    Component,
    all_of,
    any_of,
    compare_arms,
    interval_rule,
)
from tests.analysis_fixtures import holm_by_definition


def comps(*specs) -> list[Component]:
    return [Component(f"c{i}", pred, est, p) for i, (pred, est, p) in enumerate(specs)]


def test_all_of_uses_raw_p_without_correction() -> None:
    # 0.03 and 0.04: both < 0.05 raw, Holm would give 0.06 and 0.06
    family = comps((+1, 0.1, 0.03), (+1, 0.2, 0.04))
    assert holm_by_definition([0.03, 0.04]) == [0.06, 0.06]
    v = all_of(family)
    assert v.verdict == "supported" and v.rule == ALL_OF
    assert v.p_used == {"c0": 0.03, "c1": 0.04}
    assert any_of(family).verdict == "inconclusive"  # Holm: neither < 0.05


def test_all_of_needs_every_component() -> None:
    assert all_of(comps((+1, 0.1, 0.01), (+1, 0.1, 0.2))).verdict == "inconclusive"
    assert all_of(comps((+1, 0.1, 0.01), (-1, 0.1, 0.01))).verdict == "not supported"
    assert all_of(comps((+1, 0.1, 0.01), (+1, None, None))).verdict == "inconclusive"
    assert all_of([]).verdict == "inconclusive"


def test_any_of_uses_holm() -> None:
    ps = [0.01, 0.04, 0.3]
    family = comps((+1, 0.1, ps[0]), (+1, 0.1, ps[1]), (+1, 0.1, ps[2]))
    v = any_of(family)
    assert v.rule == ANY_OF and v.verdict == "supported"
    assert list(v.p_used.values()) == holm_by_definition(ps)
    assert v.results == {"c0": "as predicted", "c1": "n.s.", "c2": "n.s."}
    # significant against the prediction after Holm: not supported
    assert any_of(comps((+1, -0.1, 0.001), (+1, 0.1, 0.5))).verdict == "not supported"
    # a component without a test is left out of Holm's family
    v = any_of(comps((+1, 0.1, 0.02), (+1, None, None)))
    assert v.p_used == {"c0": 0.02, "c1": None} and v.verdict == "supported"


@pytest.mark.parametrize(
    ("low", "high", "predicted", "expected"),
    [
        (-0.3, -0.1, -1, "supported"),  # wholly below 0, as predicted
        (0.1, 0.3, -1, "not supported"),  # wholly above
        (-0.1, 0.2, -1, "inconclusive"),  # covers 0
        (-0.2, 0.0, -1, "inconclusive"),  # touches 0
        (0.1, 0.3, +1, "supported"),
        (-0.3, -0.1, +1, "not supported"),
        (None, 0.3, +1, "inconclusive"),  # no interval
        (-0.3, None, -1, "inconclusive"),
    ],
)
def test_interval_rule_judges_the_predicted_sign_by_the_interval(
    low: float | None, high: float | None, predicted: int, expected: str
) -> None:
    assert interval_rule(low, high, predicted) == expected


def paired(diff: float, p: float, tost_p: float | None = None) -> dict:
    return {"mean_diff": diff, "p": p, "tost_p": tost_p}


def test_compare_arms_holms_the_one_sided_tests_and_not_the_tosts() -> None:
    # Two arms. `greater`: p 0.02 and 0.3 -> Holm 0.04 and 0.3: arm a better. TOSTs 0.04 and
    # 0.045, each < 0.05 raw: both within the margin (Holm would have made 0.08 of the larger).
    greater = {"a": paired(0.01, 0.02, 0.04), "b": paired(-0.003, 0.3, 0.045)}
    less = {"a": paired(0.01, 0.98), "b": paired(-0.003, 0.7)}
    c = compare_arms(greater, less, sesoi=0.02)
    assert c.helps.p_used == pytest.approx({"a": 0.04, "b": 0.3})
    assert c.equivalent.p_used == {"a": 0.04, "b": 0.045}
    assert (c.superior, c.equivalence) == ("supported", "supported")
    assert (c.status("a"), c.status("b")) == ("better, by less than the SESOI", "equivalent")


def test_compare_arms_a_worse_arm_decides_against_and_a_tost_has_no_sign() -> None:
    # Arm a: `less` p 0.01 -> Holm 2 * 0.01 = 0.02 < 0.05: worse, although its TOST shows it
    # within ±0.02 (Δ −0.015). Arm b: raw greater p 0.03, Holm 0.06: not better.
    greater = {"a": paired(-0.015, 0.99, 0.01), "b": paired(0.03, 0.03, 0.6)}
    less = {"a": paired(-0.015, 0.01), "b": paired(0.03, 0.97)}
    c = compare_arms(greater, less, sesoi=0.02)
    assert (c.worse("a"), c.within("a"), c.better("b")) == (True, True, False)
    assert (c.status("a"), c.status("b")) == ("worse", "inconclusive")
    assert (c.superior, c.equivalence) == ("not supported", "inconclusive")


def test_compare_arms_without_a_record_decides_nothing() -> None:
    c = compare_arms({"a": None, "b": paired(0.0, 0.5, None)}, {}, sesoi=0.02)
    assert c.helps.results == {"a": "no test", "b": "n.s."}
    assert c.equivalent.results == {"a": "no test", "b": "no test"}
    assert (c.superior, c.equivalence, c.status("a")) == ("inconclusive",) * 3
