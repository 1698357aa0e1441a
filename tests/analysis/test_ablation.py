"""The ablation command (analysis/ablation.py) on small stores: golden tables for the 3-trial
store (expected numbers derived below by arithmetic from the values in
tests/analysis_fixtures.py), the readable defaults (headline panels), the paired tests'
corrections, baselines, pooling and blocks, and partial and insufficient data.
Scaling has its own folder (tests/analysis/scaling/).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from scipy import stats

from analysis.ablation import AblationSettings, ablation
from analysis.entropy import entropy
from analysis.result import render, table_markdown
from analysis.scaling import scaling
from analysis.selection import BEST, FINAL, ValueSpec
from bench.synthetic_store import (
    generate_store,
    trial_config,
    write_metric_rows,
    write_trial_states,
)
from records.errors import ResultsError
from records.layout import trial_row
from records.reader import load_trials, open_store
from tests.analysis.table_cells import T1, md_rows, pm2
from tests.analysis_fixtures import at, holm_by_definition


def test_golden_ablation_table(golden: Path) -> None:
    result = ablation(open_store(golden), AblationSettings(values=[FINAL, BEST]))
    # The headline metrics, in two panels: split test, and generation (gen/macc alone).
    assert [t.name for t in result.tables] == ["ablation_test", "ablation_generation"]
    test_table, gen_table = result.tables
    assert test_table.columns == [
        "arm",
        "seeds",
        "digit_acc (final)",
        "digit_acc (best)",
        "digit_entropy (final)",  # no best: entropy has no better direction
        "ce (final)",
        "ce (best)",
    ]
    assert gen_table.columns == ["arm", "seeds", "gen/macc (final)", "gen/macc (best)"]
    # mle: seeds 0 and 1. digit_acc final 0.60 (after dedup) and 0.64, best 0.60 and 0.70;
    # ce final 1.00 and 1.05, best 1.00 and 0.70; entropy final 0.9 and 0.8; macc 0.40 and 0.50.
    # del: one seed; digit_acc 0.75 (attempt 1), ce 0.90 (retry), entropy 0.5, macc 0.45.
    # Best per column: acc (higher) del 0.75 > 0.62 and > 0.65; ce final (lower) del 0.9 < 1.025;
    # ce best mle 0.85 < 0.9; macc 0.45 = 0.45: every row ties, so none is marked.
    assert md_rows(table_markdown(test_table)) == [
        [
            "mle",
            "2",
            pm2(0.60, 0.64),
            pm2(0.60, 0.70),
            pm2(0.9, 0.8),
            pm2(1.00, 1.05),
            f"**{pm2(1.00, 0.70)}**",
        ],
        ["del", "1", "**0.75**", "**0.75**", "0.5", "**0.9**", "0.9"],
    ]
    assert md_rows(table_markdown(gen_table)) == [
        ["mle", "2", pm2(0.40, 0.50), pm2(0.40, 0.50)],
        ["del", "1", "0.45", "0.45"],
    ]
    # Only one seed in common with mle: no paired test, and the notes say why.
    notes = result.all_notes()
    assert "one seed: no interval for del" in notes
    assert any(n.startswith("no paired test vs mle: it needs at least 2 seeds") for n in notes)
    assert any(n.startswith("3 of 33 metric rows were repeats") for n in notes)
    assert any(n.startswith("headline metrics only") for n in notes)

    data = test_table.data.filter(
        (pl.col("arm") == "mle") & (pl.col("metric") == "eval/test/ce")
    ).sort("value_kind")
    best, final = data.row(0, named=True), data.row(1, named=True)
    assert final["mean"] == pytest.approx(1.025)
    assert final["ci_low"] == pytest.approx(1.025 - T1 * 0.025)
    assert best["mean"] == pytest.approx(0.85) and best["best"] is True
    # The default value is the final one only.
    assert ablation(open_store(golden), AblationSettings()).tables[0].columns == [
        "arm",
        "seeds",
        "digit_acc",
        "digit_entropy",
        "ce",
    ]


def test_ablation_value_at_a_step_and_metric_choice(golden: Path) -> None:
    result = ablation(
        open_store(golden),
        AblationSettings(metrics=["eval/test/digit_*"], values=[ValueSpec("step", 100)]),
    )
    rows = md_rows(table_markdown(result.tables[0]))
    assert result.tables[0].columns == ["arm", "seeds", "digit_acc", "digit_entropy"]
    assert rows == [
        ["mle", "2", f"**{pm2(0.50, 0.70)}**", pm2(1.0, 1.1)],  # 0.6 > 0.55: mle's is best
        ["del", "1", "0.55", "0.7"],
    ]
    assert result.tables[0].marked == {(0, 2)}


def test_partial_results_of_a_running_sweep(tmp_path: Path) -> None:
    truth = generate_store(tmp_path, seeds=(0, 1, 2, 3), running_fraction=0.4, seed=3)
    running = sum(s == "RUNNING" for s in truth.statuses.values())
    assert 0 < running < truth.n_trials
    store = open_store(tmp_path)
    default = ablation(store, AblationSettings())
    assert any(f"left out {running} RUNNING trial(s)" in n for n in default.notes)
    seeds = sum(int(r[1]) for r in default.tables[0].rows)
    assert seeds == truth.n_trials - running
    live = ablation(store, AblationSettings(statuses=["TERMINATED", "RUNNING"]))
    assert sum(int(r[1]) for r in live.tables[0].rows) == truth.n_trials
    assert any("still RUNNING" in n for n in live.notes)
    # Curves take running trials by default: the seed count falls where they stopped.
    curves = entropy(store).tables[0].data.filter(pl.col("metric") == "eval/test/digit_acc")
    assert curves.filter(pl.col("step") == 0)["n"].sum() == truth.n_trials
    last = curves.filter(pl.col("step") == curves["step"].max())
    assert last["n"].sum() == truth.n_trials - running


def test_one_seed_and_missing_metrics_are_explained(tmp_path: Path) -> None:
    generate_store(tmp_path / "one", seeds=(0,), sizes={"s": 1_000_000}, benchmarks=())
    result = ablation(open_store(tmp_path / "one"), AblationSettings())
    text = render(result, "md")
    assert "±" not in table_markdown(result.tables[0])
    assert "- one seed: no interval for mle, del, ntl_mse\n" in text
    assert [t.name for t in result.tables] == ["ablation_test", "ablation_extra"]  # no tests
    # A store whose trials have only training metrics: no held-out table, and why.
    generate_store(tmp_path / "train", seeds=(0,), sizes={"s": 1_000_000}, splits=(), benchmarks=())
    bare = ablation(open_store(tmp_path / "train"), AblationSettings())
    assert bare.tables == []
    assert any(n.startswith("no held-out metrics") for n in bare.notes)
    assert scaling(open_store(tmp_path / "train")).tables == []
    assert entropy(open_store(tmp_path / "train")).tables == []


def test_rows_split_by_a_varying_config_column(tmp_path: Path) -> None:
    generate_store(tmp_path, losses=("mle", "del"), lrs=(1e-3, 3e-4), sizes={"s": 1_000_000})
    result = ablation(open_store(tmp_path), AblationSettings(metrics=["gen/macc"], values=[FINAL]))
    arms = [r[0] for r in result.tables[0].rows]
    assert arms == ["mle (lr=0.0003)", "mle (lr=0.001)", "del (lr=0.0003)", "del (lr=0.001)"]
    assert any(n.startswith("rows are split by lr as well") for n in result.notes)
    # Each del arm is tested against the mle arm with the same learning rate.
    assert [r[1] for r in result.tables[1].rows] == ["mle (lr=0.0003)", "mle (lr=0.001)"]
    by_lr = ablation(
        open_store(tmp_path), AblationSettings(metrics=["gen/macc"], values=[FINAL], by=["lr"])
    )
    assert [r[0] for r in by_lr.tables[0].rows][:2] == ["mle (lr=0.0003)", "mle (lr=0.001)"]
    with pytest.raises(ResultsError, match=r"unknown column 'lrr' for --by; available: .*lr"):
        ablation(open_store(tmp_path), AblationSettings(by=["lrr"]))


def test_rows_split_by_experiment_when_several_are_read(tmp_path: Path) -> None:
    # Two experiments with the same losses: `experiment` becomes a row key (it used to be
    # selected twice and fail with polars' DuplicateError).
    for name in ("zero2", "zero3"):
        generate_store(tmp_path, experiment=name, losses=("mle", "del"), sizes={"s": 1_000_000})
    result = ablation(open_store(tmp_path), AblationSettings(metrics=["gen/macc"], values=[FINAL]))
    arms = [r[0] for r in result.tables[0].rows]
    assert arms == [
        "mle (experiment=zero2)",
        "mle (experiment=zero3)",
        "del (experiment=zero2)",
        "del (experiment=zero3)",
    ]
    # each del arm is paired with the mle arm of its own experiment
    assert [r[1] for r in result.tables[1].rows] == [
        "mle (experiment=zero2)",
        "mle (experiment=zero3)",
    ]


def _hand_store(root: Path, values: dict[str, dict[int, dict[str, float]]]) -> Path:
    """loss -> seed -> {metric: final value at step 100}, through the sweep's writer."""
    rows, states = [], []
    for k, (loss, seeds) in enumerate(values.items()):
        for seed, metrics in seeds.items():
            trial = f"{loss}_s{seed}"
            rows += [(trial, 0, 100, m, v, at(10 * k + seed)) for m, v in metrics.items()]
            config = trial_config(loss=loss, seed=seed)
            states.append(trial_row(trial, "TERMINATED", config, ts=at(100 + 10 * k + seed)))
    write_metric_rows(root, "hand", rows)
    write_trial_states(root, "hand", states)
    return root


def test_log_confidence_is_never_marked_best(tmp_path: Path) -> None:
    # Issue 10: the most confident arm was bolded "best". Confidence is noise, not a goal.
    lc = "eval/test/log_confidence"
    store = _hand_store(
        tmp_path,
        {
            "mle": {0: {lc: 0.20}, 1: {lc: 0.21}},
            "del": {0: {lc: 0.35}, 1: {lc: 0.36}},
            "ntl_mse": {0: {lc: 0.10}, 1: {lc: 0.11}},
        },
    )
    result = ablation(open_store(store), AblationSettings(metrics=[lc], values=[FINAL, BEST]))
    table = result.tables[0]
    assert table.columns == ["arm", "seeds", "log_confidence (final)"]  # and no best column
    assert table.marked == set()
    assert "**" not in table_markdown(table)
    assert any("no 'best' for eval/test/log_confidence" in n for n in result.notes)


def test_near_equal_paired_differences_get_no_test(tmp_path: Path) -> None:
    # Issue 10: del is mle + 0.02 on every seed; in floats the differences differ in their last
    # bits, which an exact zero-variance check took for a test with t ≈ 1e15 and p ≈ 1e-30.
    acc = "eval/test/digit_acc"
    store = _hand_store(
        tmp_path,
        {
            "mle": {0: {acc: 0.33}, 1: {acc: 0.45}, 2: {acc: 0.50}},
            "del": {0: {acc: 0.35}, 1: {acc: 0.47}, 2: {acc: 0.52}},
        },
    )
    result = ablation(open_store(store), AblationSettings(metrics=[acc]))
    record = result.tables[0].data.filter(pl.col("arm") == "del").row(0, named=True)
    assert record["p"] is None and record["mean_diff"] == pytest.approx(0.02)
    assert record["no_test_reason"] == "all differences equal: no test"
    assert any(n.startswith("no paired test vs mle") for n in result.notes)
    assert "p<1e-4" not in render(result, "md")


def test_headline_panels_are_compact_and_all_shows_everything(tmp_path: Path) -> None:
    # The old default was every metric × final/best in one table (31 columns on the demo's store).
    generate_store(tmp_path, seeds=(0, 1), sizes={"s": 1_000_000})
    store = open_store(tmp_path)
    result = ablation(store, AblationSettings())
    names = [t.name for t in result.tables if not t.name.endswith("_vs_baseline")]
    assert names == ["ablation_test", "ablation_extra", "ablation_generation"]
    by_name = {t.name: t for t in result.tables}
    assert by_name["ablation_test"].columns == [
        "arm",
        "seeds",
        "digit_acc",
        "gen exact_match",
        "gen log_error",
        "digit_entropy",
        "ce",
        "error_entropy",
    ]
    assert by_name["ablation_generation"].columns == [
        "arm",
        "seeds",
        "gen/gsm8k/exact_match",
        "gen/gsm8k/log_error",
        "gen/macc",
    ]
    metrics = set(by_name["ablation_test"].data["metric"])
    assert metrics == {
        "eval/test/digit_acc",
        "gen/mathgen/exact_match",
        "gen/mathgen/log_error",
        "eval/test/digit_entropy",
        "eval/test/ce",
        "eval/test/error_entropy",
    }
    assert set(by_name["ablation_extra"].data["metric"]) >= {"gen/mathgen_extra/exact_match"}
    assert all(len(t.columns) <= 8 for t in result.tables)
    assert "split test (interpolation)" in by_name["ablation_test"].title
    everything = ablation(store, AblationSettings(all_metrics=True))
    shown = {m for t in everything.tables if t.data is not None for m in t.data["metric"]}
    assert {"eval/test/self_alignment", "eval/extra/digit_acc_int", "gen/gsm8k/rel_error"} <= shown
    assert not any(m.startswith(("train/", "model/", "perf/")) for m in shown)


def test_holm_correction_covers_the_stated_family(tmp_path: Path) -> None:
    generate_store(
        tmp_path, losses=("mle", "del", "ntl_mse"), seeds=(0, 1, 2, 3, 4), sizes={"s": 1_000_000}
    )
    metrics = ["eval/test/digit_acc", "eval/test/ce", "eval/extra/ce"]
    store = open_store(tmp_path)

    def tests_of(result) -> dict[tuple[str, str], tuple[float, float]]:
        return {
            (r["arm"], r["metric"]): (r["p"], r["p_adjusted"])
            for t in result.tables
            if t.data is not None
            for r in t.data.iter_rows(named=True)
            if r["p"] is not None
        }

    per_table = tests_of(ablation(store, AblationSettings(metrics=metrics, family="table")))
    assert len(per_table) == 6  # 2 arms × 3 metrics
    for panel in ("eval/test/", "eval/extra/"):
        keys = [k for k in per_table if k[1].startswith(panel)]
        raw = [per_table[k][0] for k in keys]
        assert [per_table[k][1] for k in keys] == pytest.approx(holm_by_definition(raw), rel=1e-12)
    per_metric = tests_of(ablation(store, AblationSettings(metrics=metrics, family="metric")))
    for metric in metrics:
        keys = [k for k in per_metric if k[1] == metric]
        assert len(keys) == 2
        raw = [per_metric[k][0] for k in keys]
        assert [per_metric[k][1] for k in keys] == pytest.approx(holm_by_definition(raw), rel=1e-12)
    result = ablation(store, AblationSettings(metrics=metrics, family="all"))
    every = tests_of(result)
    raw = [v[0] for v in every.values()]
    assert [v[1] for v in every.values()] == pytest.approx(holm_by_definition(raw), rel=1e-12)
    note = next(n for n in result.notes if n.startswith("paired tests:"))
    assert "Holm, family = every paired test of this command (6 tests per family" in note
    doc = json.loads(render(result, "json"))
    assert doc["settings"]["correction"] == "holm" and doc["settings"]["family"] == "all"
    assert any(n.startswith("paired tests:") for n in doc["notes"])
    none = tests_of(ablation(store, AblationSettings(metrics=metrics, correction="none")))
    assert all(p == adj for p, adj in none.values())


def test_baseline_may_be_one_arm_of_a_loss(tmp_path: Path) -> None:
    # DEL with and without its distance term (the grid's variants of one loss): the variant is
    # tested against plain DEL, named by its arm label. Values by hand: Δ per seed and its mean.
    values = {
        "mle": [0.50, 0.52, 0.49],
        "del_plain": [0.55, 0.56, 0.52],
        "del_distance": [0.51, 0.53, 0.50],
    }
    params = {
        "mle": None,
        "del_plain": {"alpha": 0.01, "distance": False},
        "del_distance": {"alpha": 0.01, "distance": True},
    }
    rows, states = [], []
    for arm, per_seed in values.items():
        for seed, value in enumerate(per_seed):
            trial = f"{arm}_s{seed}"
            rows.append((trial, 0, 100, "eval/test/digit_acc", value, at(seed)))
            loss = "mle" if arm == "mle" else "del"
            config = trial_config(loss=loss, params=params[arm], seed=seed)
            states.append(trial_row(trial, "TERMINATED", config, ts=at(seed)))
    write_metric_rows(tmp_path, "variants", rows)
    write_trial_states(tmp_path, "variants", states)
    result = ablation(
        open_store(tmp_path),
        AblationSettings(
            metrics=["eval/test/digit_acc"], values=[FINAL], baseline="del (distance=False)"
        ),
    )
    paired = result.tables[1]
    assert {r[0]: r[1] for r in paired.rows} == {
        "mle": "del (distance=False)",
        "del (distance=True)": "del (distance=False)",
    }
    # del+distance − del per seed: −0.04, −0.03, −0.02; mean −0.03
    by_arm = {r[0]: r[2] for r in paired.rows}
    assert "Δ=-0.03" in by_arm["del (distance=True)"]
    # One pre-chosen comparison as a family of its own: only that arm and its baseline.
    alone = ablation(
        open_store(tmp_path),
        AblationSettings(
            metrics=["eval/test/digit_acc"],
            values=[FINAL],
            baseline="del (distance=False)",
            only=["del (distance=True)"],
            family="all",
        ),
    )
    assert [r[0] for r in alone.tables[0].rows] == ["del (distance=False)", "del (distance=True)"]
    assert [r[0] for r in alone.tables[1].rows] == ["del (distance=True)"]
    assert any("(1 tests per family" in n for n in alone.notes)
    with pytest.raises(ResultsError, match="unknown arm 'del' for --arms"):
        ablation(open_store(tmp_path), AblationSettings(only=["del"]))


def test_pool_joins_experiments_of_one_study(tmp_path: Path) -> None:
    # A study run as two experiments: the ablation (mle, del at the default) and a confirmation
    # run of del at a tuned alpha on the same seeds. Pooling over `experiment` pairs the tuned
    # arm with the ablation's mle; a pooled arm that would hold one seed twice is an error.
    values = {
        ("ablation", "mle", None): [0.50, 0.52, 0.49],
        ("ablation", "del", 0.01): [0.55, 0.56, 0.52],
        ("confirm", "del", 0.1): [0.58, 0.57, 0.55],
    }
    for (experiment, loss, alpha), per_seed in values.items():
        rows, states = [], []
        for seed, value in enumerate(per_seed):
            trial = f"{loss}_{alpha}_s{seed}"
            rows.append((trial, 0, 100, "eval/test/digit_acc", value, at(seed)))
            params = None if alpha is None else {"alpha": alpha}
            config = trial_config(loss=loss, params=params, seed=seed)
            states.append(trial_row(trial, "TERMINATED", config, ts=at(seed)))
        write_metric_rows(tmp_path, experiment, rows)
        write_trial_states(tmp_path, experiment, states)
    split = ablation(
        open_store(tmp_path), AblationSettings(metrics=["eval/test/digit_acc"], values=[FINAL])
    )
    # without pooling the confirmation arm has no mle of its own experiment to pair with
    assert "del (experiment=confirm, alpha=0.1)" in [r[0] for r in split.tables[0].rows]
    pooled = ablation(
        open_store(tmp_path),
        AblationSettings(metrics=["eval/test/digit_acc"], values=[FINAL], pool=["experiment"]),
    )
    assert [r[0] for r in pooled.tables[0].rows] == ["mle", "del (alpha=0.01)", "del (alpha=0.1)"]
    paired = {r[0]: (r[1], r[2]) for r in pooled.tables[1].rows}
    assert paired["del (alpha=0.1)"][0] == "mle"
    assert "Δ=+0.06333" in paired["del (alpha=0.1)"][1]  # (0.08 + 0.05 + 0.06) / 3
    assert any(n.startswith("pooled over experiment") for n in pooled.notes)
    # the same config in both experiments would put each seed twice into one arm
    write_metric_rows(tmp_path, "confirm", [("dup_s0", 0, 100, "eval/test/digit_acc", 0.6, at(9))])
    write_trial_states(
        tmp_path,
        "confirm",
        [trial_row("dup_s0", "TERMINATED", trial_config(loss="mle", seed=0), ts=at(9))],
    )
    with pytest.raises(ResultsError, match="arm 'mle' holds several trials of seed 0"):
        ablation(
            open_store(tmp_path),
            AblationSettings(metrics=["eval/test/digit_acc"], pool=["experiment"]),
        )
    with pytest.raises(ResultsError, match="unknown column 'experimentt' for --pool"):
        ablation(open_store(tmp_path), AblationSettings(pool=["experimentt"]))


def test_block_pairs_units_across_model_sizes(tmp_path: Path) -> None:
    # Two losses at two sizes with two seeds: with `--block model` an arm holds four units
    # (size, seed) and the paired test matches each unit with the baseline's same unit.
    generate_store(
        tmp_path, losses=("mle", "del"), seeds=(0, 1), sizes={"tiny": 50_000, "s": 2_000_000}
    )
    result = ablation(
        open_store(tmp_path),
        AblationSettings(metrics=["eval/test/ce"], values=[FINAL], block=["model"]),
    )
    assert [r[0] for r in result.tables[0].rows] == ["mle", "del"]
    assert [r[1] for r in result.tables[0].rows] == ["4", "4"]
    # independently: the final CE of every trial, paired on (model, seed)
    trials = load_trials(open_store(tmp_path)).select("trial_id", "loss", "model", "seed")
    final = (
        pl.read_parquet(tmp_path / "metrics" / "**" / "*.parquet")
        .filter(pl.col("metric") == "eval/test/ce")
        .sort("step", "attempt", "ts")
        .group_by("trial_id")
        .last()
        .join(trials, on="trial_id")
    )
    wide = final.pivot(on="loss", index=["model", "seed"], values="value")
    t = stats.ttest_rel(wide["del"].to_numpy(), wide["mle"].to_numpy())
    record = next(r for r in result.tables[0].data.to_dicts() if r["arm"] == "del")
    assert record["n_pairs"] == 4
    assert record["mean_diff"] == pytest.approx(float((wide["del"] - wide["mle"]).mean()), rel=1e-9)
    assert record["p"] == pytest.approx(t.pvalue, rel=1e-9)
    assert any(n.startswith("blocks of model") for n in result.notes)


def test_a_rate_chosen_per_block_goes_with_the_block(tmp_path: Path) -> None:
    # A scaling study's main run: each size at its own learning rate (tiny 1e-2, s 3e-3). With
    # `--block model` the rate is the block's, so the arms are the losses alone and a unit
    # (size, seed) pairs with the baseline's same unit at the same rate; without blocks the rate
    # splits the arms (trials at different rates are never averaged as seeds).
    sizes = {"tiny": ({"tiny": 50_000}, (1e-2,)), "s": ({"s": 2_000_000}, (3e-3,))}
    for name, (size, lrs) in sizes.items():
        generate_store(
            tmp_path, experiment=name, losses=("mle", "del"), seeds=(0, 1), sizes=size, lrs=lrs
        )
    common = {"metrics": ["eval/test/ce"], "values": [FINAL], "pool": ["experiment"]}
    blocked = ablation(open_store(tmp_path), AblationSettings(**common, block=["model"]))
    assert [r[0] for r in blocked.tables[0].rows] == ["mle", "del"]
    assert [r[1] for r in blocked.tables[0].rows] == ["4", "4"]
    record = next(r for r in blocked.tables[0].data.to_dicts() if r["arm"] == "del")
    assert record["n_pairs"] == 4
    assert any(n.startswith("lr varies with model (one value per block)") for n in blocked.notes)
    split = ablation(open_store(tmp_path), AblationSettings(**common))
    assert [r[0] for r in split.tables[0].rows] == [
        "mle (lr=0.003, model=s)",
        "mle (lr=0.01, model=tiny)",
        "del (lr=0.003, model=s)",
        "del (lr=0.01, model=tiny)",
    ]
    # a rate that varies inside a block still splits the arms
    generate_store(tmp_path / "grid", losses=("mle", "del"), seeds=(0, 1), lrs=(1e-3, 1e-2))
    grid = ablation(open_store(tmp_path / "grid"), AblationSettings(**common, block=["model"]))
    assert [r[0] for r in grid.tables[0].rows] == [
        "mle (lr=0.001)",
        "mle (lr=0.01)",
        "del (lr=0.001)",
        "del (lr=0.01)",
    ]


def test_the_manipulation_check_is_shown_for_the_arms_that_measured_it(tmp_path: Path) -> None:
    """Issue 59: del reports ‖α∇aux‖/‖∇CE‖ and the turn at steps 0 and 100, mle none. The last
    table shows, per arm that has them, step 0, the trapezoidal mean over the two reports (their
    mean) and the final value, each as mean ± t(1)·sd/√2 over the two seeds; mle is named as
    having nothing to check; the paired tests never include these metrics. (A store without
    them, every earlier study's: no such table, as every other test here shows.)"""
    acc, ratio, turn = "eval/test/digit_acc", "train/aux_grad_ratio", "train/aux_grad_turn_deg"
    values = {  # trial -> metric -> (step 0, step 100)
        "mle_s0": {acc: (0.10, 0.50)},
        "mle_s1": {acc: (0.12, 0.56)},
        "del_s0": {acc: (0.11, 0.52), ratio: (0.006, 0.034), turn: (0.3, 1.9)},
        "del_s1": {acc: (0.10, 0.54), ratio: (0.008, 0.030), turn: (0.4, 1.5)},
    }
    rows, states = [], []
    for k, (trial, metrics) in enumerate(values.items()):
        loss, seed = trial.split("_s")
        for metric, pair in metrics.items():
            rows += [
                (trial, 0, s, metric, v, at(10 * k + s))
                for s, v in zip((0, 100), pair, strict=True)
            ]
        config = trial_config(loss=loss, seed=int(seed))
        states.append(trial_row(trial, "TERMINATED", config, ts=at(500 + k)))
    write_metric_rows(tmp_path, "hand", rows)
    write_trial_states(tmp_path, "hand", states)
    result = ablation(open_store(tmp_path), AblationSettings())
    check = result.tables[-1]
    assert check.name == "ablation_manipulation"
    assert check.columns == [
        "arm",
        "‖∇aux‖/‖∇CE‖ (step 0)",
        "‖∇aux‖/‖∇CE‖ (auc)",
        "‖∇aux‖/‖∇CE‖ (final)",
        "turn ° (step 0)",
        "turn ° (auc)",
        "turn ° (final)",
    ]
    expected = [
        "del",
        pm2(0.006, 0.008),
        pm2((0.006 + 0.034) / 2, (0.008 + 0.030) / 2),
        pm2(0.034, 0.030),
        pm2(0.3, 0.4),
        pm2((0.3 + 1.9) / 2, (0.4 + 1.5) / 2),
        pm2(1.9, 1.5),
    ]
    assert md_rows(table_markdown(check)) == [expected]
    assert "no auxiliary term, nothing to check: mle" in result.all_notes()
    tested = [t for t in result.tables if t.name.endswith("_vs_baseline")]
    assert tested and not any("aux_grad" in c for t in tested for c in t.columns)
    # --metrics shows what it names, and nothing else
    chosen = ablation(open_store(tmp_path), AblationSettings(metrics=[acc]))
    assert "ablation_manipulation" not in [t.name for t in chosen.tables]
