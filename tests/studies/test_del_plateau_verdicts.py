"""Study 3's pre-registered verdict rules (studies/del_plateau/tables.py), on hand-made ablation
JSON records: which dose is better / worse / equivalent, and the one-line answer. The p-values
and intervals are given; the rules (Holm over the two doses for the one-sided tests, no
correction for the intersection-union TOST family) are checked by hand below."""

from __future__ import annotations

import pytest

from tests.studies.study_tables import ROOT, study_tables

T = study_tables("del_plateau")
LOW, HIGH = "del (alpha=0.01)", "del (alpha=0.2)"


def result(rows: dict[str, dict]) -> dict:
    """An ablation JSON holding one paired record per arm on the primary metric."""
    records = [
        {"arm": arm, "metric": T.PRIMARY, "baseline_arm": "mle", "n_pairs": 6, **fields}
        for arm, fields in rows.items()
    ]
    return {"tables": [{"records": records}]}


def case(low: tuple, high: tuple, control_tost_p: float = 0.01) -> dict:
    """(mean_diff, p greater, p less, tost p) per dose -> the verdicts."""

    def fields(d, pg, _pl, tp):
        return {
            "mean_diff": d,
            "p": pg,
            "tost_p": tp,
            "tost_ci_low": d - 0.01,
            "tost_ci_high": d + 0.01,
        }

    greater = result({LOW: fields(*low), HIGH: fields(*high)})
    less = result(
        {LOW: {"mean_diff": low[0], "p": low[2]}, HIGH: {"mean_diff": high[0], "p": high[2]}}
    )
    control = result({T.CONTROL: {"mean_diff": 0.001, "p": 0.9, "tost_p": control_tost_p}})
    return T.verdicts(greater, less, control)


def test_one_dose_better_after_holm_supports_h1():
    # Holm over two: the smaller p 0.02 is compared with 0.05 / 2 after doubling: 0.04 < 0.05.
    v = case((0.03, 0.02, 0.98, 0.6), (0.005, 0.3, 0.7, 0.01))
    assert v["H1"]["verdict"] == "supported"
    assert v["doses"][LOW]["status"] == "better"
    assert v["doses"][LOW]["p_greater_holm"] == pytest.approx(0.04)
    assert v["doses"][HIGH]["status"] == "equivalent"
    assert v["H2"]["verdict"] == "inconclusive"  # the low dose is not equivalent
    assert v["answer"] == f"yes: DEL beats MLE at {LOW}"


def test_holm_can_remove_a_raw_significance():
    # raw p 0.03 < 0.05, but Holm: 2 * 0.03 = 0.06 (and the other 0.5): nothing significant.
    v = case((0.02, 0.03, 0.97, 0.4), (0.0, 0.5, 0.5, 0.4))
    assert v["H1"]["verdict"] == "inconclusive"
    assert v["doses"][LOW]["status"] == "inconclusive"
    assert v["answer"].startswith("undecided")


def test_equivalence_at_both_doses_needs_no_correction():
    # TOST p 0.04 and 0.045: each < 0.05 raw (intersection-union: no Holm), so H2 holds,
    # although Holm would have made the larger 0.08.
    v = case((0.004, 0.3, 0.7, 0.04), (-0.003, 0.7, 0.3, 0.045))
    assert v["H2"]["verdict"] == "supported"
    assert {d["status"] for d in v["doses"].values()} == {"equivalent"}
    assert v["answer"] == "no: DEL is equivalent to MLE within ±0.02 at both doses"
    assert v["H2"]["tost"]["rule"].startswith("all_of")


def test_a_negative_difference_inside_the_margin_is_still_equivalent():
    # the TOST's claim has no sign: Δ = -0.015 with TOST p 0.01 is equivalent, not "against".
    v = case((-0.015, 0.99, 0.01, 0.01), (-0.001, 0.6, 0.4, 0.01))
    assert v["doses"][HIGH]["status"] == "equivalent"
    # the low dose is significantly worse (p< 0.01 -> Holm 0.02) although inside the margin
    assert v["doses"][LOW]["status"] == "worse"
    assert v["H1"]["verdict"] == "not supported"
    assert v["answer"] == f"no: DEL is worse than MLE at {LOW}"


def test_better_and_equivalent_is_a_small_effect():
    v = case((0.01, 0.001, 0.999, 0.01), (0.0, 0.5, 0.5, 0.01))
    assert v["doses"][LOW]["status"] == "better, by less than the SESOI"
    assert v["H1"]["verdict"] == "supported"


def test_a_missing_test_leaves_the_families_open():
    greater = result({LOW: {"mean_diff": None, "p": None, "tost_p": None}})
    v = T.verdicts(greater, result({}), result({}))
    assert v["H1"]["verdict"] == "inconclusive"
    assert v["H2"]["verdict"] == "inconclusive"  # all_of: a component without a test
    assert v["H3"]["verdict"] == "no test"
    assert v["doses"][HIGH]["status"] == "inconclusive"


def test_the_control_arm_is_judged_by_its_tost():
    assert case((0, 0.5, 0.5, 0.5), (0, 0.5, 0.5, 0.5), 0.01)["H3"]["verdict"] == "equivalent"
    v = case((0, 0.5, 0.5, 0.5), (0, 0.5, 0.5, 0.5), 0.2)
    assert v["H3"]["verdict"] == "not shown equivalent"


def test_no_test_is_read_before_the_main_run_has_finished(tmp_path):
    # The tests run only once all 24 main trials finished (the committed store); a store part-way
    # (a synthetic store of the main run's experiment, some trials still running) counts as such.
    from analysis.study_report import finished_trials
    from bench.synthetic_store import generate_store
    from records.reader import load_trials, open_store

    root = ROOT / "studies" / "del_plateau" / "results"
    assert finished_trials(str(root), T.MAIN) == T.TRIALS
    partial = tmp_path / "results"
    generate_store(
        partial,
        experiment=T.MAIN,
        losses=("mle", "del"),
        seeds=(0, 1),
        running_fraction=0.25,
        benchmarks=(),
    )
    trials = load_trials(open_store(str(partial), [T.MAIN]))
    assert 0 < finished_trials(str(partial), T.MAIN) < trials.height
    assert finished_trials(str(tmp_path / "no-such-store"), T.MAIN) == 0
