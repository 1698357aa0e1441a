"""What trials cost (analysis.trial_costs) and the power plan priced in hours (analysis power
--budget-hours), on stores whose every cost is written out here.

The priced store: the curve store's 5 mle and 5 del seeds, each trial reporting cumulative
costs at steps 0 and 400 (the last holds the total):
    mle: wall 1800 s, CPU 3600 s (two busy cores), start-up 180 s, 1e6 tokens  -> 0.5 h, 1 core-h
    del: wall 3600 s, CPU 7200 s,                 start-up 180 s, 2e6 tokens  -> 1 h,   2 core-h
so n seeds of del against mle cost n × 3 core-hours and n × 1.5 hours of wall time at the
pilot's concurrency. Trials start 10 s apart and end at start + wall, so the pilot ran them
largely at once: concurrency = Σ wall / (last end − first start), by hand below.
"""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest

from analysis.__main__ import main
from analysis.trial_costs import cost_lines, cost_totals, per_trial_cost, trial_costs
from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from records.reader import open_store
from tests.analysis.curve_fixtures import ACC, write_curve_store
from tests.analysis_fixtures import at

WALL = {"mle": 1800.0, "del": 3600.0}


def add_costs(root, experiment: str = "curves", seeds=range(5)) -> dict[str, float]:
    """Cost rows and end times for the curve store's trials; returns trial_id -> wall s."""
    rows, ends, walls = [], [], {}
    for i, (loss, seed) in enumerate((lo, s) for lo in ("mle", "del") for s in seeds):
        trial, wall = f"{loss}_s{seed}", WALL[loss]
        walls[trial] = wall
        for step, share in ((0, 0.1), (400, 1.0)):  # cumulative: step 0 a tenth of the total
            rows += [
                (trial, 0, step, "perf/wall_s", wall * share, at(10 * i + step)),
                (trial, 0, step, "perf/cpu_s", 2 * wall * share, at(10 * i + step)),
                (trial, 0, step, "perf/gpu_s", 0.0, at(10 * i + step)),
                (trial, 0, step, "perf/startup_s", 180.0, at(10 * i + step)),
            ]
        rows.append((trial, 0, 400, "train/tokens_seen", wall / 1800 * 1e6, at(10 * i + 400)))
        config = trial_config(loss=loss, seed=seed)
        start = at(10 * i)
        ends.append(
            trial_row(
                trial,
                "TERMINATED",
                config,
                start=start,
                end=start + dt.timedelta(seconds=wall),
                ts=at(10 * i + 9999),
            )
        )
    write_metric_rows(root, experiment, rows)
    write_trial_states(root, experiment, ends)
    return walls


@pytest.fixture(scope="module")
def priced(tmp_path_factory):
    store = write_curve_store(tmp_path_factory.mktemp("priced") / "results")
    walls = add_costs(store.root)
    # Trial i starts at 10·i s; the last (del_s4, i = 9) ends at 90 + 3600 s.
    concurrency = sum(walls.values()) / (90 + 3600)
    return store, concurrency


def test_each_trial_total_is_its_last_report(priced) -> None:
    store, _ = priced
    costs = trial_costs(open_store(str(store.root)))
    assert costs is not None and costs.height == 10
    mle = costs.filter(pl.col("trial_id") == "mle_s3").row(0, named=True)
    assert (mle["wall_s"], mle["cpu_s"], mle["gpu_s"], mle["startup_s"]) == (1800, 3600, 0, 180)
    assert mle["tokens"] == 1e6
    per_loss = cost_totals(costs.with_columns(pl.col("trial_id").str.head(3).alias("loss")), "loss")
    by = {r["loss"]: r for r in per_loss.iter_rows(named=True)}
    assert by["mle"]["core_h"] == pytest.approx(5 * 1.0) and by["del"]["core_h"] == 5 * 2.0
    assert by["del"]["wall_h_per_trial"] == pytest.approx(1.0)
    lines = cost_lines(costs, {t: t[:3] for t in costs["trial_id"]}, ["mle", "del"])
    assert lines == [
        "cost: 10 trial(s), 15 core-hours, 0 GPU-hours, 7.5 trial-hours of wall time "
        "(7% start-up), 15,000,000 tokens",
        "cost of mle: 5 trial(s), 5 core-hours, 0 GPU-hours, 2.5 trial-hours of wall time "
        "(10% start-up), 5,000,000 tokens",
        "cost of del: 5 trial(s), 10 core-hours, 0 GPU-hours, 5 trial-hours of wall time "
        "(5% start-up), 10,000,000 tokens",
    ]


def test_per_trial_costs_come_in_the_arms_order(priced) -> None:
    # polars' group_by returns groups in any order; the power note listed them so, and a
    # committed report then rebuilt differently from run to run.
    store, _ = priced
    costs = trial_costs(open_store(str(store.root)))
    labels = {t: t.split("_")[0] for t in costs["trial_id"]}
    for order in (("mle", "del"), ("del", "mle")):
        for _ in range(5):
            per = per_trial_cost(costs, labels, order)
            assert tuple(per) == order
    assert per["del"]["wall_h"] == pytest.approx(1.0) and per["mle"]["wall_h"] == 0.5
    assert tuple(per_trial_cost(costs, labels, ("mle", "absent"))) == ("mle",)


def test_a_store_without_costs_says_nothing(tmp_path) -> None:
    store = write_curve_store(tmp_path / "results")
    assert trial_costs(open_store(str(store.root))) is None
    assert cost_lines(None) == []


def test_the_ablation_header_carries_the_costs(priced, capsys) -> None:
    store, _ = priced
    assert main(["ablation", str(store.root), "--metric", ACC, "--format", "json"]) == 0
    header = json.loads(capsys.readouterr().out)["header"]
    assert "cost: 10 trial(s), 15 core-hours" in " ".join(header)
    assert any(line.startswith("cost of del: 5 trial(s), 10 core-hours") for line in header)


def test_power_prices_each_plan_and_checks_the_budget(priced, capsys) -> None:
    store, concurrency = priced
    args = ["power", str(store.root), "--metric", ACC, "--delta", "0.02", "--format", "json"]
    assert main([*args, "--budget-hours", "1e9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = doc["tables"][0]["records"][0]
    n, n_tost = rec["seeds_needed"], rec["seeds_needed_tost"]
    assert rec["core_h"] == pytest.approx(n * 3.0) and rec["gpu_h"] == 0
    assert rec["wall_h"] == pytest.approx(n * 1.5 / concurrency)
    assert rec["wall_h_tost"] == pytest.approx(n_tost * 1.5 / concurrency)
    assert rec["fits"] is True and doc["settings"]["budget_hours"] == 1e9
    assert any(f"({concurrency:.2g} trials at once)" in note for note in doc["notes"])

    # A budget between the plan's hours and the TOST plan's: one fits, the other does not.
    low, high = sorted([rec["wall_h"], rec["wall_h_tost"]])
    assert low < high, "the fixture should give the two plans different hours"
    assert main([*args, "--budget-hours", str((low + high) / 2)]) == 0
    rec = json.loads(capsys.readouterr().out)["tables"][0]["records"][0]
    fits = {rec["wall_h"]: rec["fits"], rec["wall_h_tost"]: rec["fits_tost"]}
    assert fits == {low: True, high: False}
    assert main([*args[:-2], "--budget-hours", str(high * 2)]) == 0
    assert " fits" in capsys.readouterr().out


def test_power_without_costs_says_it_cannot_price(tmp_path, capsys) -> None:
    store = write_curve_store(tmp_path / "results")
    argv = ["power", str(store.root), "--metric", ACC, "--delta", "0.02", "--budget-hours", "5"]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "core_h" not in doc["tables"][0]["records"][0]
    assert any("report no cost" in note for note in doc["notes"])


@pytest.mark.parametrize("value", ["0", "-1", "inf"])
def test_a_bad_budget_exits_2_naming_the_flag(priced, capsys, value) -> None:
    store, _ = priced
    argv = ["power", str(store.root), "--delta", "0.02", f"--budget-hours={value}"]
    assert main(argv) == 2
    assert "--budget-hours" in capsys.readouterr().err
