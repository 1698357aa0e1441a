"""Study 1's pre-registered verdict rule (studies/del_cpu/tables.py), on hand-made test records:
supported = every component significant in the predicted direction, not supported = one
significant against it, inconclusive otherwise (README, Hypotheses)."""

from __future__ import annotations

import pytest

from tests.studies.study_tables import study_tables

T = study_tables("del_cpu")
FAMILY = T.Family("H3", "del", {"ntl_mse": -1, "dist2": +1}, ["eval/test/digit_entropy"])


def record(arm: str, diff: float, p_holm: float | None, reason: str | None = None) -> dict:
    return {
        "arm": arm,
        "metric": "eval/test/digit_entropy",
        "mean_diff": diff,
        "n_pairs": 5,
        "p": None if p_holm is None else p_holm / 2,
        "p_adjusted": p_holm,
        "no_test_reason": reason,
    }


@pytest.mark.parametrize(
    ("ntl", "dist2", "expected"),
    [
        ((-0.1, 0.01), (0.2, 0.04), "supported"),
        ((-0.1, 0.01), (0.2, 0.06), "inconclusive"),  # one component not significant
        ((-0.1, 0.01), (-0.2, 0.04), "not supported"),  # significant against the prediction
        ((0.1, 0.2), (-0.2, 0.3), "inconclusive"),  # wrong sign but not significant
    ],
)
def test_verdict_rule(ntl, dist2, expected):
    records = [record("ntl_mse", *ntl), record("dist2", *dist2)]
    # The baseline's own records (no test) are ignored.
    records.append(record("del", 0.0, None, "baseline"))
    result = T.verdict(records, FAMILY)
    assert result["verdict"] == expected
    assert [c["arm"] for c in result["components"]] == ["ntl_mse", "dist2"]


def test_a_component_without_a_test_is_inconclusive_and_says_why():
    records = [record("ntl_mse", -0.1, 0.01), record("dist2", 0.2, None, "one seed")]
    result = T.verdict(records, FAMILY)
    assert result["verdict"] == "inconclusive"
    assert result["components"][1]["result"] == "no test: one seed"


def test_h5_compares_each_hypothesis_across_splits():
    names = ["H1", "H2", "H3", "H4"]
    interp = ["supported", "inconclusive", "not supported", "inconclusive"]
    extra = ["supported", "supported", "not supported", "inconclusive"]
    verdicts = [
        {"family": f"{n}{s}", "verdict": v, "baseline": "mle", "components": []}
        for n, a, b in zip(names, interp, extra, strict=True)
        for s, v in (("", a), ("_extra", b))
    ]
    h5 = T.h5(verdicts)
    assert h5 == {"H1": "holds", "H2": "does not hold", "H3": "holds", "H4": "holds"}
    lines = T.verdict_lines(verdicts, h5)
    assert (
        "- H4: inconclusive / inconclusive: holds (both inconclusive: nothing carried over)"
        in lines
    )
    assert "- H2: inconclusive / supported: does not hold" in lines
