"""Study 5's pre-registered verdict rules (studies/del_pretrained/tables.py), on hand-made
ablation JSON records: H1 (one-sided paired t, del above mle), its opposite (del below), H2
(TOST ±0.02), and the one-line answer. One DEL arm, so no correction; the p-values are given."""

from __future__ import annotations

from tests.studies.study_tables import study_tables

T = study_tables("del_pretrained")


def result(fields: dict) -> dict:
    """An ablation JSON holding the DEL arm's one paired record on the primary metric, and a
    record of another metric that the rules must not read."""
    records = [
        {"arm": T.ARM, "metric": T.PRIMARY, "baseline_arm": "mle", "n_pairs": 8, **fields},
        {"arm": T.ARM, "metric": "eval/test/digit_acc", "baseline_arm": "mle", "p": 1e-9},
    ]
    return {"tables": [{"records": records}]}


def case(diff: float, p_greater: float, p_less: float, tost_p: float) -> dict:
    up = {"mean_diff": diff, "p": p_greater, "tost_p": tost_p}
    up |= {"tost_ci_low": diff - 0.01, "tost_ci_high": diff + 0.01}
    return T.verdicts(result(up), result({"mean_diff": diff, "p": p_less}))


def test_a_significant_rise_supports_h1():
    v = case(0.03, 0.01, 0.99, 0.7)
    assert (v["H1"], v["H2"]) == ("supported", "inconclusive")
    assert v["answer"] == "yes: DEL's exact match is higher than MLE's"


def test_a_significant_rise_inside_the_margin_says_so():
    v = case(0.008, 0.02, 0.98, 0.01)
    assert (v["H1"], v["H2"]) == ("supported", "supported")
    assert v["answer"] == "yes: DEL's exact match is higher than MLE's, but by less than 0.02"


def test_a_significant_fall_is_not_supported_and_equivalence_still_counts():
    v = case(-0.03, 0.99, 0.01, 0.8)
    assert (v["H1"], v["H2"]) == ("not supported", "inconclusive")
    assert v["answer"] == "no: DEL's exact match is lower than MLE's"
    small = case(-0.01, 0.98, 0.03, 0.02)
    assert small["answer"] == "no: DEL's exact match is lower than MLE's, by less than 0.02"


def test_equivalence_without_a_difference_answers_no():
    v = case(0.002, 0.4, 0.6, 0.004)
    assert (v["H1"], v["H2"]) == ("inconclusive", "supported")
    assert v["answer"] == "no: DEL is equivalent to MLE within ±0.02 exact match"


def test_neither_is_undecided_and_p_exactly_alpha_is_not_significant():
    v = case(0.01, 0.05, 0.95, 0.2)
    assert (v["H1"], v["H2"]) == ("inconclusive", "inconclusive")
    assert v["answer"].startswith("undecided")


def test_no_record_or_no_test_decides_nothing():
    empty = {"tables": [{"records": []}]}
    v = T.verdicts(empty, empty)
    assert (v["H1"], v["H2"]) == ("inconclusive", "inconclusive")
    assert v["n_pairs"] is None
    table = T.verdict_lines(v)
    assert "| gen/mathgen/exact_match | — | — | — | — | — | [—, —] |" in table
