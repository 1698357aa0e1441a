"""Study 1's tables and figures, from its results store alone (`make study-del-report`):

    python studies/del_cpu/tables.py RESULTS OUT

Every number in the study's README comes from one of these `python -m analysis` commands; each is
written to OUT as Markdown (`<name>.md`) and JSON (`<name>.json`, full precision), and OUT/index
lists the commands. The hypothesis families are the pre-registered ones (README): each is one
`ablation --arms … --family all` command, so its Holm correction covers exactly its components.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from analysis.__main__ import main as analysis
from analysis.__main__ import save
from analysis.search import search
from analysis.store import open_store

ABLATION = "del-cpu-ablation"
SEARCH = "del-cpu-search"
CONFIRM = "del-cpu-confirm"
DEL = "del (distance=False)"
DEL_DISTANCE = "del (distance=True)"

# (name, baseline arm, compared arms, metrics): one family of tests each (README, Hypotheses).
INTERPOLATION = {
    "test": "eval/test",
    "gen": "gen/mathgen",
}
EXTRAPOLATION = {
    "test": "eval/extra",
    "gen": "gen/mathgen_extra",
}


def families(split: dict[str, str], suffix: str) -> list[tuple[str, str, list[str], list[str]]]:
    ev, gen = split["test"], split["gen"]
    return [
        (f"H1{suffix}", "mle", [DEL], [f"{gen}/exact_match", f"{ev}/digit_acc"]),
        (
            f"H2{suffix}",
            "mle",
            [DEL],
            [f"{gen}/mae", f"{gen}/rel_error", f"{gen}/log_error"],
        ),
        (f"H3{suffix}", DEL, ["ntl_mse", "ntl_was", "dist2"], [f"{ev}/digit_entropy"]),
        (f"H4{suffix}", DEL, [DEL_DISTANCE], [f"{gen}/exact_match", f"{ev}/digit_acc"]),
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
    result = search(open_store(root, [SEARCH]), objectives=["eval/test/digit_acc:max"], top=1)
    record = next(t for t in result.tables if t.name == "search_best").data.to_dicts()[0]
    return float(record["alpha"]), float(record["decay_base"])


def run(out: Path, name: str, args: list[str], index: list[str]) -> None:
    """One analysis command, saved as OUT/<name>.md and OUT/<name>.json."""
    save(args, out / name)
    index.append(f"{name}: python -m analysis {' '.join(args)}")


def main(root: str, out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index: list[str] = []
    ablation = ["ablation", root, "--experiment", ABLATION]
    for name, baseline, arms, metrics in families(INTERPOLATION, "") + families(
        EXTRAPOLATION, "_extra"
    ):
        arm_args = [a for arm in arms for a in ("--arms", arm)]
        chosen = ["--metrics", ",".join(metrics), "--family", "all"]
        run(out, name, [*ablation, "--baseline", baseline, *arm_args, *chosen], index)
    run(out, "secondary", [*ablation, "--metrics", ",".join(SECONDARY), "--family", "all"], index)
    run(out, "entropy", ["entropy", root, "--experiment", ABLATION], index)
    run(
        out,
        "search",
        ["search", root, "--experiment", SEARCH, "--objective", "eval/test/digit_acc:max"],
        index,
    )
    # H6 (exploratory): DEL at the search's best setting against the default and MLE, seeds 0-4.
    both = ["ablation", root, "--experiment", ABLATION, "--experiment", CONFIRM, "--pool"]
    h6 = ["experiment", "--metrics", "eval/test/digit_acc,gen/mathgen/exact_match"]
    run(out, "H6_vs_mle", [*both, *h6, "--family", "all"], index)
    alpha, beta = best_setting(root)
    default = "del (alpha=0.01, decay_base=1.02, distance=False)"
    tuned = f"del (alpha={alpha:g}, decay_base={beta:g}, distance=False)"
    if tuned != default:
        vs_default = ["--baseline", default, "--arms", tuned, "--family", "all"]
        run(out, "H6", [*both, *h6, *vs_default], index)
    with contextlib.redirect_stdout(io.StringIO()):
        code = analysis(["report", root, "--experiment", ABLATION, "-o", str(out / "ablation")])
    if code != 0:
        raise SystemExit(f"the ablation report exited {code}")
    index.append(f"ablation/index.html: python -m analysis report {root} --experiment {ABLATION}")
    (out / "index.txt").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
