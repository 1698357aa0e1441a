"""Study 4's registered verdict rules S1-S4 (studies/scaling_code/tables.py, README
Hypotheses), on hand-made records shaped like the `scaling` and `ablation` JSON tables."""

from __future__ import annotations

import pytest

from tests.studies.study_tables import study_tables

T = study_tables("scaling_code")


def prediction(loo: tuple[float, float], extrap: tuple[float, float]) -> dict:
    return {
        "loss": "mle",
        "form": "huber",
        "loo_diff_ci_low": loo[0],
        "loo_diff_ci_high": loo[1],
        "extrap_diff_ci_low": extrap[0],
        "extrap_diff_ci_high": extrap[1],
    }


@pytest.mark.parametrize(
    ("loo", "extrap", "expected"),
    [
        ((-0.03, -0.01), (-0.05, 0.02), "supported"),  # LOO favours EE, extrapolation no worse
        ((-0.03, -0.01), (-0.05, -0.01), "supported"),
        ((-0.03, -0.01), (0.01, 0.04), "not supported"),  # EE extrapolates worse
        ((0.01, 0.03), (-0.05, -0.01), "not supported"),  # CE predicts left-out sizes better
        ((-0.03, 0.01), (-0.05, -0.01), "inconclusive"),  # the LOO interval covers 0
        ((None, None), (-0.05, -0.01), "inconclusive"),
    ],
)
def test_s1(loo, extrap, expected):
    assert T.s1(prediction(loo, extrap)) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(-0.05, -0.01, "supported"), (-0.01, 0.02, "inconclusive"), (0.01, 0.02, "not supported")],
)
def test_s2(low, high, expected):
    assert T.s2({"ci_low": low, "ci_high": high}) == expected


def power(sa: tuple[float, float], lc: tuple[float, float]) -> list[dict]:
    return [
        {"metric": f"eval/test/{m}", "a_ci_low": ci[0], "a_ci_high": ci[1]}
        for m, ci in (("self_alignment", sa), ("log_confidence", lc))
    ]


@pytest.mark.parametrize(
    ("sa", "lc", "expected"),
    [
        ((-0.006, 0.004), (-0.002, 0.008), "supported"),  # both within ±0.01 (registered)
        ((-0.006, 0.004), (0.004, 0.014), "inconclusive"),  # lc's interval crosses the bound
        ((-0.006, 0.004), (0.015, 0.041), "not supported"),  # lc's exponent is beyond +0.01
        ((-0.094, -0.069), (-0.002, 0.002), "not supported"),  # sa's beyond −0.01
        ((-0.03, 0.02), (-0.01, 0.04), "inconclusive"),  # within ±0.05 is not within ±0.01
        ((None, None), (-0.002, 0.002), "inconclusive"),
    ],
)
def test_s3_is_a_bounded_claim(sa, lc, expected):
    assert T.s3(power(sa, lc)) == expected
    assert T.s3(power(sa, lc)[:1]) == "inconclusive"  # a fit is missing


def ablation(lc: tuple[float, float], ee: tuple[float, float, float | None]) -> list[dict]:
    return [
        {
            "arm": "compensated",
            "metric": "eval/test/log_confidence",
            "mean_diff": lc[0],
            "p": lc[1],
        },
        {
            "arm": "compensated",
            "metric": "eval/test/error_entropy",
            "mean_diff": ee[0],
            "p": ee[1],
            "tost_p": ee[2],
        },
    ]


@pytest.mark.parametrize(
    ("lc", "ee", "expected"),
    [
        ((-0.05, 0.001), (0.004, 0.4, 0.01), "supported"),  # lower lc, EE within ±0.02
        ((-0.05, 0.001), (0.004, 0.4, 0.20), "inconclusive"),  # EE's equivalence not shown
        ((-0.05, 0.20), (0.004, 0.4, 0.01), "inconclusive"),  # lc not significantly lower
        ((-0.05, 0.001), (0.03, 0.01, 0.9), "not supported"),  # EE higher
        ((0.05, 0.001), (0.0, 0.9, 0.01), "not supported"),  # lc higher
    ],
)
def test_s4(lc, ee, expected):
    assert T.s4(ablation(lc, ee)) == expected
    assert T.s4(ablation(lc, ee)[:1]) == "inconclusive"
