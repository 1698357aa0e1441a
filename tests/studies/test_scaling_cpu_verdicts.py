"""Study 2's pre-registered verdict rules S1-S4 (studies/scaling_cpu/tables.py, README
Hypotheses), on hand-made records shaped like the `scaling` and `ablation` JSON tables."""

from __future__ import annotations

import json

import pytest

from tests.studies.study_tables import study_tables

T = study_tables("scaling_cpu")


def verdict_record(low: float, high: float, loo_ce: float, loo_ee: float) -> dict:
    return {
        "loss": "mle",
        "split": "test",
        "axis": "N",
        "delta_r2": (low + high) / 2,
        "delta_r2_ci_low": low,
        "delta_r2_ci_high": high,
        "loo_ce": loo_ce,
        "loo_ee": loo_ee,
    }


@pytest.mark.parametrize(
    ("low", "high", "loo_ce", "loo_ee", "expected"),
    [
        (0.01, 0.03, 0.05, 0.02, "supported"),
        # the interval is above 0 but EE predicts a left-out size worse: both are required
        (0.01, 0.03, 0.02, 0.05, "inconclusive"),
        (-0.01, 0.03, 0.05, 0.02, "inconclusive"),  # covers 0
        (-0.03, -0.01, 0.05, 0.02, "not supported"),
    ],
)
def test_s1(low, high, loo_ce, loo_ee, expected):
    assert T.s1(verdict_record(low, high, loo_ce, loo_ee))["verdict"] == expected


def test_s1_without_an_interval_is_inconclusive():
    record = verdict_record(0.01, 0.03, 0.05, 0.02) | {"delta_r2_ci_low": None}
    result = T.s1(record)
    assert result["verdict"] == "inconclusive"
    assert "no interval" in result["numbers"]


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(-0.05, -0.01, "supported"), (-0.05, 0.01, "inconclusive"), (0.01, 0.05, "not supported")],
)
def test_s2(low, high, expected):
    record = {"loss": "mle", "split": "test", "slope_per_decade": (low + high) / 2}
    assert T.s2(record | {"ci_low": low, "ci_high": high})["verdict"] == expected


def power_record(leaf: str, yes: bool, split: str = "eval/test") -> dict:
    return {
        "loss": "mle",
        "metric": f"{split}/{leaf}",
        "a": -0.1 if yes else 0.001,
        "a_ci_low": -0.12 if yes else -0.01,
        "a_ci_high": -0.08 if yes else 0.01,
        "follows_power_law": yes,
    }


@pytest.mark.parametrize(
    ("sa", "lc", "expected"),
    [
        (False, False, "supported"),
        (True, False, "not supported"),
        (False, True, "not supported"),
    ],
)
def test_s3(sa, lc, expected):
    records = [power_record("self_alignment", sa), power_record("log_confidence", lc)]
    # A fit of the other split must not be read for this one.
    records.append(power_record("self_alignment", True, split="eval/extra"))
    assert T.s3(records, "mle", "test")["verdict"] == expected


def test_s3_with_a_missing_fit_is_inconclusive_and_names_it():
    result = T.s3([power_record("self_alignment", False)], "mle", "test")
    assert result["verdict"] == "inconclusive"
    assert "log_confidence" in result["numbers"]


def ablation_record(leaf: str, diff: float, p_holm: float | None, arm: str = "compensated") -> dict:
    return {
        "arm": arm,
        "metric": f"eval/test/{leaf}",
        "mean_diff": diff,
        "n_pairs": 14,
        "p": None if p_holm is None else p_holm / 2,
        "p_adjusted": p_holm,
    }


@pytest.mark.parametrize(
    ("lc", "ee", "expected"),
    [
        ((-0.1, 0.01), (0.01, 0.5), "supported"),  # confidence lower, EE not significantly higher
        ((-0.1, 0.01), (-0.05, 0.01), "supported"),  # EE significantly lower is not "hurt"
        ((-0.1, 0.01), (0.05, 0.01), "not supported"),  # EE significantly higher
        ((0.1, 0.01), (0.0, 0.9), "not supported"),  # confidence significantly higher
        ((-0.1, 0.2), (0.01, 0.5), "inconclusive"),  # neither significant
    ],
)
def test_s4(lc, ee, expected):
    records = [ablation_record("log_confidence", *lc), ablation_record("error_entropy", *ee)]
    # The baseline's own rows carry no test and are ignored.
    records += [ablation_record("log_confidence", 0.0, None, arm="mle")]
    assert T.s4(records, "test")["verdict"] == expected


def test_verdicts_reads_the_tables_and_judges_mle_on_the_test_split(tmp_path):
    def table(name: str, records: list[dict]) -> dict:
        return {"name": name, "records": records}

    verdict_rows = [verdict_record(0.01, 0.03, 0.05, 0.02)]
    verdict_rows.append(verdict_record(-0.03, -0.01, 0.05, 0.02) | {"loss": "compensated"})
    trend = {"loss": "mle", "split": "test", "axis": "N", "slope_per_decade": -0.03}
    scaling = [
        table("scaling_verdict", verdict_rows),
        table("scaling_ee_share_trend", [trend | {"ci_low": -0.05, "ci_high": -0.01}]),
        table(
            "scaling_power",
            [power_record("self_alignment", False), power_record("log_confidence", True)],
        ),
    ]
    (tmp_path / "scaling.json").write_text(json.dumps({"tables": scaling}))
    s4 = [ablation_record("log_confidence", -0.1, 0.01), ablation_record("error_entropy", 0, 0.9)]
    (tmp_path / "S4.json").write_text(json.dumps({"tables": [table("ablation_test", s4)]}))
    (tmp_path / "S4_extra.json").write_text(json.dumps({"tables": [table("ablation_extra", [])]}))
    got = {
        (v["hypothesis"], v["loss"], v["split"]): (v["verdict"], v["primary"])
        for v in T.verdicts(tmp_path)
    }
    assert got == {
        ("S1", "mle", "test"): ("supported", True),
        ("S1", "compensated", "test"): ("not supported", False),
        ("S2", "mle", "test"): ("supported", True),
        ("S3", "mle", "test"): ("not supported", True),
        ("S3", "compensated", "test"): ("inconclusive", False),  # no fits of compensated
        ("S4", "compensated − mle", "test"): ("supported", True),
        ("S4", "compensated − mle", "extra"): ("inconclusive", False),
    }
