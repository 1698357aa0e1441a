"""Expected seeds and hours of sequential designs against the fixed design, at the spreads of the
paired differences studies 3 and 5 measured:

    python -m bench.sequential

For each spread, the fixed design's seeds (exact: noncentral t, TOST quadrature) and each
sequential design's maximum and expected seeds at a true difference of 0 and of +SESOI (t scale,
analysis/sequential/plan.py: 65,536 simulated studies each), both hypotheses (superiority and
equivalence within ±0.02), α 0.05 one-sided, power 0.8, non-binding futility. Hours per pair
come from the studies' stores: study 5's trials reported their cost (perf/wall_s: trial-hours of
an mle and a del trial); study 3's did not, so its pair is priced by the trials' end − start
(those started once; two at a time, a trial took 760–850 s). Numbers for bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import time

import polars as pl

from analysis.sequential.plan import plan
from analysis.trial_costs import trial_costs
from records.reader import load_trials, open_store

SESOI = 0.02
SPREADS = [
    ("study 5, main run (9 pairs)", "5", 0.0028),
    ("study 5, its design's sd (pilot B's CI top)", "5", 0.0184),
    ("study 3, pilot (last:3)", "3", 0.0141),
    ("study 3, α 0.01 main run", "3", 0.0090),
    ("study 3, α 0.2 main run", "3", 0.0178),
    ("study 3, reorder control", "3", 0.0216),
]
"""(label, study, sd of the paired differences) as the studies' READMEs report them."""
DESIGNS = [("obrien-fleming", 2), ("obrien-fleming", 3), ("pocock", 2), ("pocock", 3)]


def pair_hours() -> dict[str, float]:
    """Trial-hours of one (reference, treatment) pair in each study's main run."""
    s5 = open_store("studies/del_pretrained/results", ["del-pretrained-main"])
    costs = trial_costs(s5).join(load_trials(s5).select("trial_id", "loss"), on="trial_id")
    per_arm = costs.group_by("loss").agg(pl.col("wall_s").mean() / 3600)["wall_s"]
    s3 = open_store("studies/del_plateau/results", ["del-plateau-main"])
    spans = load_trials(s3).filter(pl.col("starts") == 1)
    hours = spans.select(((pl.col("end") - pl.col("start")).dt.total_seconds() / 3600).alias("h"))
    return {"5": float(per_arm.sum()), "3": 2 * float(hours["h"].mean())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    start = time.perf_counter()
    hours = pair_hours()
    print(f"trial-hours per pair: study 5 {hours['5']:.3f}, study 3 {hours['3']:.3f}\n")
    print(
        "| spread | sd | design | looks at | E[seeds] Δ=0 | E[seeds] Δ=SESOI | fixed seeds "
        "| E[h] Δ=0 / Δ=SESOI | fixed h | power |"
    )
    print("|---|---:|---|---|---:|---:|---:|---|---:|---:|")
    for label, study, sd in SPREADS:
        for spending, looks in DESIGNS:
            p = plan(sd, SESOI, looks=looks, spending=spending, hypotheses="both")
            h = hours[study]
            e0, e1 = p.at_zero.expected_seeds, p.at_sesoi.expected_seeds
            print(
                f"| {label} | {sd:g} | {spending} K={looks} | {', '.join(map(str, p.test.seeds))} "
                f"| {e0:.2f} | {e1:.2f} | {p.fixed_seeds} | {e0 * h:.2f} / {e1 * h:.2f} "
                f"| {p.fixed_seeds * h:.2f} | {p.power:.3f} |"
            )
    load = os.getloadavg()[0]
    print(f"\n{time.perf_counter() - start:.0f} s wall, load average {load:.1f}")


if __name__ == "__main__":
    main()
