"""Study 1's tables, verdicts and figures, from its results store alone (`make study-del-report`):

    python studies/del_cpu/tables.py RESULTS OUT

Every number in the study's README is in one of these tables, each an analysis command written to
OUT by analysis/study_report.py. The hypothesis families are the pre-registered ones (README):
each is one `ablation --arms … --family all` command, so its Holm correction covers exactly its
components.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from analysis.ablation import AblationSettings
from analysis.entropy import EntropySettings
from analysis.search import SearchSettings, search
from analysis.study_report import StudyReport, markdown_table, run_script
from records.reader import open_store

H6_METRICS = ["eval/test/digit_acc", "gen/mathgen/exact_match"]
ALPHA = 0.05
"""The pre-registered significance level (Holm-corrected p within a family)."""
ABLATION = "del-cpu-ablation"
SEARCH = "del-cpu-search"
CONFIRM = "del-cpu-confirm"
DEL = "del (distance=False)"
DEL_DISTANCE = "del (distance=True)"

INTERPOLATION = {
    "test": "eval/test",
    "gen": "gen/mathgen",
}
EXTRAPOLATION = {
    "test": "eval/extra",
    "gen": "gen/mathgen_extra",
}


class Family(NamedTuple):
    """One pre-registered family of paired tests, Holm-corrected together."""

    name: str
    baseline: str
    predicted: dict[str, int]
    """Each compared arm and the predicted sign of arm - baseline (+1 higher, -1 lower)."""
    metrics: list[str]


def verdict(records: list[dict[str, Any]], family: Family, alpha: float = ALPHA) -> dict:
    """The pre-registered verdict on one family from its `ablation --format json` records:
    supported = every component significant (corrected p < alpha) in the predicted direction;
    not supported = at least one significant against it; inconclusive otherwise."""
    components = []
    for arm, sign in family.predicted.items():
        for metric in family.metrics:
            found = [r for r in records if r["arm"] == arm and r["metric"] == metric]
            if len(found) != 1 or found[0]["p_adjusted"] is None:
                reason = found[0]["no_test_reason"] if found else "no such arm or metric"
                components.append({"arm": arm, "metric": metric, "result": f"no test: {reason}"})
                continue
            r = found[0]
            significant = r["p_adjusted"] < alpha
            agrees = np.sign(r["mean_diff"]) == sign
            result = (
                "as predicted" if significant and agrees else "against" if significant else "n.s."
            )
            components.append(
                {
                    "arm": arm,
                    "metric": metric,
                    "predicted": "higher" if sign > 0 else "lower",
                    "mean_diff": r["mean_diff"],
                    "n_pairs": r["n_pairs"],
                    "p": r["p"],
                    "p_holm": r["p_adjusted"],
                    "result": result,
                }
            )
    results = [c["result"] for c in components]
    if all(r == "as predicted" for r in results):
        overall = "supported"
    elif "against" in results:
        overall = "not supported"
    else:
        overall = "inconclusive"
    return {
        "family": family.name,
        "baseline": family.baseline,
        "verdict": overall,
        "components": components,
    }


def families(split: dict[str, str], suffix: str) -> list[Family]:
    """The pre-registered families on one split: H1-H4 (README, Hypotheses)."""
    ev, gen = split["test"], split["gen"]
    return [
        Family(f"H1{suffix}", "mle", {DEL: +1}, [f"{gen}/exact_match", f"{ev}/digit_acc"]),
        Family(
            f"H2{suffix}",
            "mle",
            {DEL: -1},
            [f"{gen}/mae", f"{gen}/rel_error", f"{gen}/log_error"],
        ),
        # NTL sharper (lower entropy) than DEL, DIST2 flatter (higher).
        Family(
            f"H3{suffix}",
            DEL,
            {"ntl_mse": -1, "ntl_was": -1, "dist2": +1},
            [f"{ev}/digit_entropy"],
        ),
        Family(f"H4{suffix}", DEL, {DEL_DISTANCE: -1}, [f"{gen}/exact_match", f"{ev}/digit_acc"]),
    ]


# The secondary table: every loss against MLE on every metric below, Holm over the whole table.
SECONDARY = [
    f"{split}/{leaf}"
    for split in ("eval/test", "eval/extra")
    for leaf in (
        "digit_acc",
        "digit_acc_int",
        "digit_acc_dec",
        "digit_entropy",
        "ce",
        "error_entropy",
        "self_alignment",
        "log_confidence",
    )
] + [
    f"{bench}/{leaf}"
    for bench in ("gen/mathgen", "gen/mathgen_extra")
    for leaf in ("exact_match", "mae", "rel_error", "log_error")
]


def best_setting(root: str) -> tuple[float, float]:
    """DEL's (alpha, decay_base) of the search's best trial by its objective."""
    result = search(
        open_store(root, [SEARCH]), SearchSettings(objectives=("eval/test/digit_acc:max",), top=1)
    )
    record = next(t for t in result.tables if t.name == "search_best").data.to_dicts()[0]
    return float(record["del.alpha"]), float(record["del.decay_base"])  # named per loss


def test_family(
    report: StudyReport, root: str, experiments: list[str], family: Family, pool: tuple = ()
) -> dict:
    """One family's paired tests (`ablation --baseline … --arms … --family all`, so Holm covers
    exactly its components), saved as OUT/<name>.md/.json, and its verdict."""
    settings = AblationSettings(
        metrics=family.metrics,
        pool=pool,
        only=tuple(family.predicted),
        baseline=family.baseline,
        family="all",
    )
    tables = report.command_json(family.name, root, experiments, settings)["tables"]
    return verdict([r for t in tables for r in t.get("records") or []], family)


def verdict_lines(verdicts: list[dict], h5: dict[str, str]) -> list[str]:
    """OUT/verdicts.md: a line per component, then H5 per family."""
    columns = ["family", "verdict", "arm − baseline", "metric", "predicted", "Δ mean", "pairs"]
    columns += ["p", "p (Holm)", "component"]
    rows = []
    for v in verdicts:
        for c in v["components"]:
            if "p" not in c:
                cells = [c["arm"], c["metric"], "", "", "", "", "", c["result"]]
            else:
                cells = [f"{c['arm']} − {v['baseline']}", c["metric"], c["predicted"]]
                cells += [f"{c['mean_diff']:+.4g}", str(c["n_pairs"]), f"{c['p']:.3g}"]
                cells += [f"{c['p_holm']:.3g}", c["result"]]
            rows.append([v["family"], v["verdict"], *cells])
    lines = markdown_table(columns, rows, "lllllrrrrl")
    lines += ["", "H5 (extrapolation verdict = interpolation verdict):"]
    by_name = {v["family"]: v["verdict"] for v in verdicts}
    for name, holds in h5.items():
        pair = (by_name[name], by_name[f"{name}_extra"])
        both = " (both inconclusive: nothing carried over)" if pair == ("inconclusive",) * 2 else ""
        lines.append(f"- {name}: {pair[0]} / {pair[1]}: {holds}{both}")
    return lines


def h5(verdicts: list[dict]) -> dict[str, str]:
    """H5: each of H1-H4 whose extrapolation verdict equals its interpolation verdict."""
    by_name = {v["family"]: v["verdict"] for v in verdicts}
    return {
        name: "holds" if by_name[name] == by_name[f"{name}_extra"] else "does not hold"
        for name in ("H1", "H2", "H3", "H4")
    }


TABLES = {
    "secondary": AblationSettings(metrics=SECONDARY, family="all"),
    "entropy": EntropySettings(),
}
"""After the families, on the ablation: the secondary table and the digit entropies."""


def main(root: str, out_dir: str) -> None:
    with StudyReport(out_dir) as report:
        verdicts = []
        for family in families(INTERPOLATION, "") + families(EXTRAPOLATION, "_extra"):
            verdicts.append(test_family(report, root, [ABLATION], family))
        report.commands(root, [ABLATION], TABLES)
        present = open_store(root).experiments
        if SEARCH in present:
            best = SearchSettings(objectives=("eval/test/digit_acc:max",))
            report.command("search", root, [SEARCH], best)
        if CONFIRM in present:
            verdicts += h6(report, root)
        for experiment in (e for e in (SEARCH, CONFIRM) if e not in present):
            report.note(f"not in the store (not run): {experiment}")
        holds = h5(verdicts)
        report.verdicts({"families": verdicts, "H5": holds}, verdict_lines(verdicts, holds))
        report.page(root, ABLATION, "ablation")


def h6(report: StudyReport, root: str) -> list[dict]:
    """H6 (exploratory): DEL at the search's best setting against MLE, and against the default
    setting (a family, when the best is not the default)."""
    both, pooled = [ABLATION, CONFIRM], ("experiment",)
    h6 = AblationSettings(metrics=H6_METRICS, pool=pooled, family="all")
    report.command("H6_vs_mle", root, both, h6)
    alpha, beta = best_setting(root)
    default = "del (alpha=0.01, decay_base=1.02, distance=False)"
    tuned = f"del (alpha={alpha:g}, decay_base={beta:g}, distance=False)"
    if tuned == default:
        return []
    return [test_family(report, root, both, Family("H6", default, {tuned: +1}, H6_METRICS), pooled)]


if __name__ == "__main__":
    run_script(main, __doc__)
