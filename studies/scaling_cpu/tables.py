"""Study 2's tables, figures and verdicts, from its results store alone
(`make study-scaling-report`):

    python studies/scaling_cpu/tables.py RESULTS OUT

Every number in the study's README is in one of these tables, each an analysis command written to
OUT by analysis/study_report.py, but `budget` (every trial's tokens seen and training FLOPs,
6·N·D), computed here. OUT/verdicts.md and .json apply the pre-registered rules of S1-S4 (README,
Hypotheses) to the tables' records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from analysis.ablation import AblationSettings
from analysis.family_rules import interval_rule
from analysis.result import Result, Table
from analysis.scaling.settings import ScalingSettings
from analysis.study_report import (
    StudyReport,
    final_values,
    json_records,
    judged_table,
    run_script,
)

EXPERIMENT = "scaling-cpu"
DECOMPOSITION = ("ce", "error_entropy", "self_alignment", "log_confidence")
ALPHA = 0.05
"""The pre-registered significance level of S4 (Holm-corrected over its two tests)."""
PRIMARY = ("mle", "test")
"""The (loss, split) S1-S3 are judged on; the others are reported with the same rules."""
SPLITS = {"test": "eval/test", "extra": "eval/extra"}


def judged(hypothesis: str, loss: str, split: str, verdict: str, numbers: str) -> dict[str, Any]:
    """One verdict row of OUT/verdicts.json."""
    return {
        "hypothesis": hypothesis,
        "loss": loss,
        "split": split,
        "verdict": verdict,
        "numbers": numbers,
    }


def s1(verdict_record: dict[str, Any]) -> dict[str, Any]:
    """S1 on one (loss, split) row of the scaling verdict table: supported when the bootstrap
    interval of R²(EE) − R²(CE) lies above 0 and EE's leave-one-size-out error is below CE's;
    not supported when the interval lies below 0; inconclusive otherwise."""
    r = verdict_record
    low, high = r["delta_r2_ci_low"], r["delta_r2_ci_high"]
    if low is None or high is None or r["loo_ce"] is None or r["loo_ee"] is None:
        result = "inconclusive"
    elif low > 0 and r["loo_ee"] < r["loo_ce"]:
        result = "supported"
    elif high < 0:
        result = "not supported"
    else:
        result = "inconclusive"
    numbers = (
        f"ΔR² {r['delta_r2']:+.4f} [{low:+.4f}, {high:+.4f}]; "
        f"LOO CE {r['loo_ce']:.2%} / EE {r['loo_ee']:.2%}"
        if None not in (low, high, r["loo_ce"], r["loo_ee"])
        else "no interval or no leave-one-size-out error"
    )
    return judged("S1", r["loss"], r["split"], result, numbers)


def s2(trend_record: dict[str, Any]) -> dict[str, Any]:
    """S2 on one (loss, split) row of the EE-share trend table: the slope of EE/CE per decade of
    N; supported if its interval lies below 0, not supported if above, inconclusive if it
    covers 0."""
    r = trend_record
    low, high = r["ci_low"], r["ci_high"]
    result = interval_rule(low, high, predicted=-1)
    numbers = (
        f"slope {r['slope_per_decade']:+.4f} per decade [{low:+.4f}, {high:+.4f}]"
        if low is not None and high is not None
        else "no interval"
    )
    return judged("S2", r["loss"], r["split"], result, numbers)


def s3(power_records: list[dict[str, Any]], loss: str, split: str) -> dict[str, Any]:
    """S3 on one (loss, split): the plain fit's "power law?" of self-alignment and log-confidence;
    supported if "no" for both, not supported if "yes" for either."""
    found = {}
    for leaf in ("self_alignment", "log_confidence"):
        metric = f"{SPLITS[split]}/{leaf}"
        rows = [r for r in power_records if r["loss"] == loss and r["metric"] == metric]
        found[leaf] = rows[0] if len(rows) == 1 else None
    if any(r is None for r in found.values()):
        result, numbers = (
            "inconclusive",
            "no fit for " + ", ".join(k for k, v in found.items() if v is None),
        )
    else:
        yes = [k for k, r in found.items() if r["follows_power_law"]]
        result = "not supported" if yes else "supported"
        numbers = "; ".join(
            f"{k}: a {r['a']:+.4f} [{r['a_ci_low']:+.4f}, {r['a_ci_high']:+.4f}], "
            f"power law {'yes' if r['follows_power_law'] else 'no'}"
            for k, r in found.items()
        )
    return judged("S3", loss, split, result, numbers)


def s4(ablation_records: list[dict[str, Any]], split: str, alpha: float = ALPHA) -> dict:
    """S4 on one split from `ablation --block model` records (compensated − mle, Holm over the
    two): supported if log-confidence is significantly lower and EE not significantly higher;
    not supported if EE is significantly higher or log-confidence significantly higher;
    inconclusive otherwise."""
    tests = {}
    for leaf in ("log_confidence", "error_entropy"):
        metric = f"{SPLITS[split]}/{leaf}"
        rows = [
            r
            for r in ablation_records
            if r["arm"] == "compensated" and r["metric"] == metric and r["p_adjusted"] is not None
        ]
        tests[leaf] = rows[0] if len(rows) == 1 else None
    if any(t is None for t in tests.values()):
        return judged("S4", "compensated − mle", split, "inconclusive", "no paired test")

    def significant(leaf: str, sign: int) -> bool:
        t = tests[leaf]
        return t["p_adjusted"] < alpha and (t["mean_diff"] > 0) == (sign > 0)

    if significant("error_entropy", +1) or significant("log_confidence", +1):
        result = "not supported"
    elif significant("log_confidence", -1):
        result = "supported"
    else:
        result = "inconclusive"
    numbers = "; ".join(
        f"{leaf}: Δ {t['mean_diff']:+.4g} (p {t['p']:.3g}, Holm {t['p_adjusted']:.3g}, "
        f"{t['n_pairs']} pairs)"
        for leaf, t in tests.items()
    )
    return judged("S4", "compensated − mle", split, result, numbers)


def verdicts(out: Path) -> list[dict[str, Any]]:
    """S1-S4 for every (loss, split) the tables in OUT hold; `primary` marks the judged one."""
    scaling = out / "scaling.json"
    power = json_records(scaling, "scaling_power")
    found = [s1(r) for r in json_records(scaling, "scaling_verdict") if r["axis"] == "N"]
    found += [s2(r) for r in json_records(scaling, "scaling_ee_share_trend") if r["axis"] == "N"]
    pairs = sorted({(r["loss"], split) for r in found for split in [r["split"]]})
    found += [s3(power, loss, split) for loss, split in pairs]
    found += [
        s4(json_records(out / name, "ablation_" + split), split)
        for name, split in (("S4.json", "test"), ("S4_extra.json", "extra"))
    ]
    for v in found:
        v["primary"] = (v["loss"], v["split"]) == PRIMARY or (
            v["hypothesis"] == "S4" and v["split"] == PRIMARY[1]
        )
    return sorted(found, key=lambda v: (v["hypothesis"], not v["primary"], v["loss"], v["split"]))


def budget(root: str) -> Result:
    """Per trial: N, the tokens seen at the end (D) and 6·N·D."""
    names = ["model/params_non_embedding", "train/tokens_seen"]
    final, notes = final_values(root, EXPERIMENT, names, ("loss", "model", "seed"))
    final = final.with_columns((6 * pl.col(names[0]) * pl.col(names[1])).alias("flops")).sort(
        names[0], "loss", "seed"
    )
    rows = [
        [
            r["model"],
            r["loss"],
            str(r["seed"]),
            f"{r[names[0]]:,.0f}",
            f"{r[names[1]]:,.0f}",
            f"{r['flops']:.3g}",
        ]
        for r in final.iter_rows(named=True)
    ]
    table = Table(
        name="budget",
        title="tokens seen (D, non-padding input tokens) and training FLOPs ≈ 6·N·D per trial",
        columns=["model", "loss", "seed", "N (non-embedding)", "D", "6·N·D"],
        rows=rows,
        data=final,
    )
    result = Result("budget", "Budget per trial", notes=notes)
    result.tables.append(table)
    return result


METRICS = tuple(f"eval/{s}/{m}" for s in ("test", "extra") for m in DECOMPOSITION)
TABLES = {
    "scaling": ScalingSettings(metrics=METRICS, n_boot=2000, seed=0),
    **{
        name: AblationSettings(
            metrics=(f"eval/{split}/log_confidence", f"eval/{split}/error_entropy"),
            block=("model",),
            family="all",
        )
        for name, split in (("S4", "test"), ("S4_extra", "extra"))
    },
    "per_size": AblationSettings(metrics=METRICS),
}
"""S1-S3 and the extrapolation check read `scaling`; S4 is one `ablation --block model` family
per split (Holm over its two tests)."""


def main(root: str, out_dir: str) -> None:
    with StudyReport(out_dir) as report:
        report.commands(root, [EXPERIMENT], TABLES)
        made_by = "studies/scaling_cpu/tables.py"
        report.result("budget", budget(root), f"{made_by} (tokens seen and 6·N·D per trial)")
        report.page(root, EXPERIMENT, "report")
        found = verdicts(report.out)
        keys = ("hypothesis", "loss", "split")
        report.verdicts(
            found, judged_table(found, keys), f"{made_by} (S1-S4 by the pre-registered rules)"
        )


if __name__ == "__main__":
    run_script(main, __doc__)
