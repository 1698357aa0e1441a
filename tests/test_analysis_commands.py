"""The analysis commands on small generated stores: golden tables for the 3-trial store (expected
numbers derived below by arithmetic from the values in tests/analysis_fixtures.py), checks of the
whole pipeline against an independent reading + scipy, partial and insufficient data, and the CLI.
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from scipy import stats

from analysis.__main__ import main
from analysis.ablation import ablation
from analysis.entropy import entropy
from analysis.scaling import scaling
from analysis.search import search
from analysis.selection import FINAL, ValueSpec
from analysis.store import ResultsError, open_store
from analysis.synthetic import generate_store
from analysis.table import render, table_markdown
from tests.analysis_fixtures import write_golden_store, write_power_law_store

ROOT = Path(__file__).resolve().parents[1]
# The t quantile at 0.975 with 1 degree of freedom (two seeds): t(1) is the Cauchy distribution,
# whose quantile is tan(π(p − 1/2)).
T1 = math.tan(math.pi * (0.975 - 0.5))


def pm2(a: float, b: float) -> str:
    """The cell for seeds a and b: mean ± t(1)·sd/√2, where sd/√2 = |a − b| / 2."""
    return f"{(a + b) / 2:.4g} ± {T1 * abs(a - b) / 2:.2g}"


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_golden_store(tmp_path / "results")


def md_rows(markdown: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in markdown.splitlines()[2:]]


def test_golden_ablation_table(golden: Path) -> None:
    result = ablation(open_store(golden))
    main_table = result.tables[0]
    assert main_table.columns == [
        "arm",
        "seeds",
        "eval/test/digit_acc (final)",
        "eval/test/digit_acc (best)",
        "eval/test/ce (final)",
        "eval/test/ce (best)",
        "eval/test/digit_entropy (final)",  # no best: entropy has no better direction
        "gen/macc (final)",
        "gen/macc (best)",
    ]
    # mle: seeds 0 and 1. digit_acc final 0.60 (after dedup) and 0.64, best 0.60 and 0.70;
    # ce final 1.00 and 1.05, best 1.00 and 0.70; entropy final 0.9 and 0.8; macc 0.40 and 0.50.
    # del: one seed; digit_acc 0.75 (attempt 1), ce 0.90 (retry), entropy 0.5, macc 0.45.
    # Best per column: acc (higher) del 0.75 > 0.62 and > 0.65; ce final (lower) del 0.9 < 1.025;
    # ce best mle 0.85 < 0.9; macc 0.45 = 0.45: every row ties, so none is marked.
    expected = [
        [
            "mle",
            "2",
            pm2(0.60, 0.64),
            pm2(0.60, 0.70),
            pm2(1.00, 1.05),
            f"**{pm2(1.00, 0.70)}**",
            pm2(0.9, 0.8),
            pm2(0.40, 0.50),
            pm2(0.40, 0.50),
        ],
        ["del", "1", "**0.75**", "**0.75**", "**0.9**", "0.9", "0.5", "0.45", "0.45"],
    ]
    assert md_rows(table_markdown(main_table)) == expected
    # Only one seed in common with mle: no paired test, and the notes say why.
    assert len(result.tables) == 1
    notes = result.all_notes()
    assert "one seed: no interval for del" in notes
    assert any(n.startswith("no paired test vs mle: it needs at least 2 seeds") for n in notes)
    assert any(n.startswith("3 of 33 metric rows were repeats") for n in notes)

    data = main_table.data.filter(
        (pl.col("arm") == "mle") & (pl.col("metric") == "eval/test/ce")
    ).sort("value_kind")
    best, final = data.row(0, named=True), data.row(1, named=True)
    assert final["mean"] == pytest.approx(1.025)
    assert final["ci_low"] == pytest.approx(1.025 - T1 * 0.025)
    assert best["mean"] == pytest.approx(0.85) and best["best"] is True


def test_ablation_value_at_a_step_and_metric_choice(golden: Path) -> None:
    result = ablation(
        open_store(golden), metrics=["eval/test/digit_*"], values=[ValueSpec("step", 100)]
    )
    rows = md_rows(table_markdown(result.tables[0]))
    assert result.tables[0].columns == [
        "arm",
        "seeds",
        "eval/test/digit_acc",
        "eval/test/digit_entropy",
    ]
    assert rows == [
        ["mle", "2", f"**{pm2(0.50, 0.70)}**", pm2(1.0, 1.1)],  # 0.6 > 0.55: mle's is best
        ["del", "1", "0.55", "0.7"],
    ]
    assert result.tables[0].marked == {(0, 2)}


def test_golden_entropy_curves(golden: Path) -> None:
    result = entropy(open_store(golden))
    curves = next(t for t in result.tables if t.name == "entropy_test")
    assert curves.columns == ["arm", "step", "seeds", "digit_entropy", "digit_acc"]
    assert md_rows(table_markdown(curves)) == [
        ["mle", "0", "2", pm2(2.3, 2.3), pm2(0.10, 0.12)],
        ["mle", "100", "2", pm2(1.0, 1.1), pm2(0.50, 0.70)],
        ["mle", "200", "2", pm2(0.9, 0.8), pm2(0.60, 0.64)],
        ["del", "0", "1", "2.3", "0.11"],
        ["del", "100", "1", "0.7", "0.55"],
        ["del", "200", "1", "0.5", "0.75"],
    ]
    assert pm2(2.3, 2.3) == "2.3 ± 0"  # identical seeds: a zero-width interval, not a missing one
    final = next(t for t in result.tables if t.name == "entropy_final")
    assert md_rows(table_markdown(final))[1] == ["del", "1", "0.5", "**0.75**"]


def test_golden_scaling_fit(tmp_path: Path) -> None:
    # ce = 3·N^−0.1 and EE = 1.8·N^−0.1 exactly: a = −0.1, c = ln 3 and ln 1.8, R² = 1.
    result = scaling(open_store(write_power_law_store(tmp_path)))
    fits = result.tables[0].data.sort("metric")
    ce, ee = fits.row(0, named=True), fits.row(1, named=True)
    assert ce["metric"] == "eval/test/ce" and ee["metric"] == "eval/test/error_entropy"
    assert ce["a"] == pytest.approx(-0.1) and ee["a"] == pytest.approx(-0.1)
    assert ce["c"] == pytest.approx(math.log(3.0)) and ee["c"] == pytest.approx(math.log(1.8))
    assert ce["r2"] == pytest.approx(1.0)
    assert (ce["sizes"], ce["points"], ce["a_ci_low"]) == (3, 3, None)
    row = md_rows(table_markdown(result.tables[0]))[0]
    assert row[-1] == "fewer than 4 points: no CI"
    share = result.tables[1].data
    assert share["ee_over_ce"].to_list() == pytest.approx([0.6, 0.6, 0.6])
    assert share["N"].to_list() == [1e6, 1e7, 1e8]
    # At step 100 every value is doubled: the intercept moves to ln 6.
    mid = scaling(open_store(tmp_path), value=ValueSpec("step", 100)).tables[0].data
    assert mid.filter(pl.col("metric") == "eval/test/ce")["c"][0] == pytest.approx(math.log(6))
    # With the total count, N = N_non_embedding + 5e6: compare with scipy on those points.
    total = scaling(open_store(tmp_path), params="total").tables[0].data
    n = np.array([1e6, 1e7, 1e8])
    ref = stats.linregress(np.log(n + 5e6), np.log(3.0 * n**-0.1))
    assert total.filter(pl.col("metric") == "eval/test/ce")["a"][0] == pytest.approx(ref.slope)


def test_scaling_refuses_two_sizes(tmp_path: Path) -> None:
    result = scaling(open_store(write_power_law_store(tmp_path, sizes=(1e6, 1e7))))
    rows = md_rows(table_markdown(result.tables[0]))
    # loss, split, metric, then sizes, points, a, CI, c, R², remark
    assert rows[0][3:] == ["2", "2", "—", "—", "—", "—", "fewer than 3 sizes (2): no fit"]
    assert "no group has enough sizes for a fit (3 or more distinct N needed)" in result.notes


def test_scaling_fits_one_line_per_dataset_and_split(tmp_path: Path) -> None:
    sizes = {"a": 1_000_000, "b": 4_000_000, "c": 16_000_000, "d": 64_000_000}
    for name, dataset in (("arith", "mathgen"), ("words", "gsm8k")):
        truth = generate_store(
            tmp_path, experiment=name, dataset=dataset, losses=("mle", "del"), sizes=sizes, seed=9
        )
    fits = scaling(open_store(tmp_path)).tables[0].data
    # experiment and dataset vary, so they join loss and split in the group key.
    assert fits.select("loss", "experiment", "dataset", "split").unique().height == 2 * 2 * 2
    ee = fits.filter(pl.col("metric").str.ends_with("/error_entropy"))
    assert ee.height == 8
    # The generator's error entropy is 1.2·N^−0.12 times 2% seed noise: the slope is recovered.
    assert ee["a"].to_numpy() == pytest.approx(truth.exponents["error_entropy"], abs=0.02)


def test_golden_search_best_and_pareto(golden: Path) -> None:
    best = search(open_store(golden)).tables[0]
    # Default objective gen/macc (max): mle_s1 0.50 > del_s0 0.45 > mle_s0 0.40.
    assert [r[1] for r in best.rows] == ["mle_s1", "del_s0", "mle_s0"]
    assert best.columns[:4] == ["rank", "trial_id", "status", "gen/macc (max)"]
    # gen/macc (max) vs eval/test/ce (min), final values: mle_s0 (0.40, 1.00), mle_s1 (0.50,
    # 1.05), del_s0 (0.45, 0.90). del_s0 beats mle_s0 on both; mle_s1 and del_s0 trade off.
    result = search(open_store(golden), objectives=["gen/macc", "eval/test/ce"])
    front = result.tables[0]
    assert front.name == "search_pareto"
    assert [r[0] for r in front.rows] == ["mle_s1", "del_s0"]
    assert "fewer than 4 trials with objective values: no importance table" in result.notes


def test_search_importance_finds_the_parameter_that_matters(tmp_path: Path) -> None:
    # In the generator macc grows with model size and barely depends on the seed.
    generate_store(tmp_path, losses=("mle",), seeds=(0, 1, 2, 3), seed=2)
    result = search(open_store(tmp_path))
    importance = result.tables[1].data.sort("eta_squared", descending=True)
    assert importance["parameter"].to_list() == ["model", "seed"]
    assert importance["eta_squared"][0] > 0.9 > 0.2 > importance["eta_squared"][1]


def test_bad_objectives_are_named(golden: Path) -> None:
    with pytest.raises(ResultsError, match="unknown metric 'gen/nope' for --objective"):
        search(open_store(golden), objectives=["gen/nope"])
    with pytest.raises(ResultsError, match="no known direction; write eval/test/digit_entropy:max"):
        search(open_store(golden), objectives=["eval/test/digit_entropy"])


def _independent_final_values(root: Path, metric: str) -> dict[str, float]:
    """Final value per trial, read with pyarrow and deduplicated in plain Python."""
    table = pq.read_table(root / "metrics").to_pylist()
    latest: dict[tuple[str, int], tuple[tuple, float]] = {}
    for r in table:
        if r["metric"] != metric:
            continue
        key = (r["trial_id"], r["step"])
        rank = (r["attempt"], r["ts"])
        if key not in latest or rank > latest[key][0]:
            latest[key] = (rank, r["value"])
    final: dict[str, tuple[int, float]] = {}
    for (trial, step), (_, value) in latest.items():
        if trial not in final or step > final[trial][0]:
            final[trial] = (step, value)
    return {t: v for t, (_, v) in final.items()}


def test_ablation_intervals_and_paired_test_match_scipy(tmp_path: Path) -> None:
    generate_store(
        tmp_path,
        losses=("mle", "del"),
        seeds=(0, 1, 2, 3, 4),
        sizes={"s": 1_000_000},
        restored_fraction=0.1,
        retried_fraction=0.3,
        seed=13,
    )
    metric = "eval/test/digit_acc"
    result = ablation(open_store(tmp_path), metrics=[metric], values=[FINAL])
    finals = _independent_final_values(tmp_path, metric)
    trials = pq.read_table(tmp_path / "trials").to_pylist()
    by_seed: dict[str, dict[int, float]] = defaultdict(dict)
    for t in trials:
        by_seed[t["loss"]][t["seed"]] = finals[t["trial_id"]]
    data = {r["arm"]: r for r in result.tables[0].data.iter_rows(named=True)}
    for loss in ("mle", "del"):
        values = [by_seed[loss][s] for s in range(5)]
        lo, hi = stats.t.interval(0.95, 4, loc=np.mean(values), scale=stats.sem(values))
        assert data[loss]["mean"] == pytest.approx(np.mean(values), rel=1e-12)
        assert (data[loss]["ci_low"], data[loss]["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
    ref = stats.ttest_rel(
        [by_seed["del"][s] for s in range(5)], [by_seed["mle"][s] for s in range(5)]
    )
    assert data["del"]["p"] == pytest.approx(ref.pvalue, rel=1e-8)
    assert data["del"]["t"] == pytest.approx(ref.statistic, rel=1e-10)
    sig = result.tables[1]
    assert sig.name == "ablation_vs_baseline" and sig.rows[0][:2] == ["del", "mle"]
    assert "(n=5)" in sig.rows[0][2]


def test_partial_results_of_a_running_sweep(tmp_path: Path) -> None:
    truth = generate_store(tmp_path, seeds=(0, 1, 2, 3), running_fraction=0.4, seed=3)
    running = sum(s == "RUNNING" for s in truth.statuses.values())
    assert 0 < running < truth.n_trials
    store = open_store(tmp_path)
    default = ablation(store)
    assert any(f"left out {running} RUNNING trial(s)" in n for n in default.notes)
    seeds = sum(int(r[1]) for r in default.tables[0].rows)
    assert seeds == truth.n_trials - running
    live = ablation(store, statuses=["TERMINATED", "RUNNING"])
    assert sum(int(r[1]) for r in live.tables[0].rows) == truth.n_trials
    assert any("still RUNNING" in n for n in live.notes)
    # Curves take running trials by default: the seed count falls where they stopped.
    curves = entropy(store).tables[0].data.filter(pl.col("metric") == "eval/test/digit_acc")
    assert curves.filter(pl.col("step") == 0)["n"].sum() == truth.n_trials
    last = curves.filter(pl.col("step") == curves["step"].max())
    assert last["n"].sum() == truth.n_trials - running


def test_one_seed_and_missing_metrics_are_explained(tmp_path: Path) -> None:
    generate_store(tmp_path / "one", seeds=(0,), sizes={"s": 1_000_000}, benchmarks=())
    result = ablation(open_store(tmp_path / "one"))
    text = render(result, "md")
    assert "±" not in table_markdown(result.tables[0])
    assert "- one seed: no interval for mle, del, ntl\n" in text
    assert len(result.tables) == 1  # no paired-test table
    # A store whose trials have only training metrics: no held-out table, and why.
    generate_store(tmp_path / "train", seeds=(0,), sizes={"s": 1_000_000}, splits=(), benchmarks=())
    bare = ablation(open_store(tmp_path / "train"))
    assert bare.tables == []
    assert any(n.startswith("no held-out metrics") for n in bare.notes)
    assert scaling(open_store(tmp_path / "train")).tables == []
    assert entropy(open_store(tmp_path / "train")).tables == []


def test_rows_split_by_a_varying_config_column(tmp_path: Path) -> None:
    generate_store(tmp_path, losses=("mle", "del"), lrs=(1e-3, 3e-4), sizes={"s": 1_000_000})
    result = ablation(open_store(tmp_path), metrics=["gen/macc"], values=[FINAL])
    arms = [r[0] for r in result.tables[0].rows]
    assert arms == ["mle (lr=0.0003)", "mle (lr=0.001)", "del (lr=0.0003)", "del (lr=0.001)"]
    assert any(n.startswith("rows are split by lr as well") for n in result.notes)
    # Each del arm is tested against the mle arm with the same learning rate.
    assert [r[1] for r in result.tables[1].rows] == ["mle (lr=0.0003)", "mle (lr=0.001)"]
    by_lr = ablation(open_store(tmp_path), metrics=["gen/macc"], values=[FINAL], by=["lr"])
    assert [r[0] for r in by_lr.tables[0].rows][:2] == ["mle (lr=0.0003)", "mle (lr=0.001)"]
    with pytest.raises(ResultsError, match=r"unknown column 'lrr' for --by; available: .*lr"):
        ablation(open_store(tmp_path), by=["lrr"])


def test_cli_prints_tables_and_exits_2_on_bad_input(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ablation", str(golden)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Ablation") and "| del | 1 |" in out
    assert main(["ablation", str(golden), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    csv = pl.read_csv(io.StringIO(captured.out))
    assert set(csv["arm"]) == {"mle", "del"} and "mean" in csv.columns
    assert "note: one seed: no interval for del" in captured.err
    assert main(["scaling", str(golden), "--format", "latex"]) == 0
    assert "\\begin{tabular}" in capsys.readouterr().out
    cases = [
        (["ablation", str(golden / "missing")], "does not exist"),
        (["entropy", str(golden), "--experiment", "nope"], "unknown experiment 'nope'"),
        (
            ["ablation", str(golden), "--metric", "eval/test/nope"],
            "unknown metric 'eval/test/nope'",
        ),
        (["ablation", str(golden), "--value", "last"], "--value must be final, best or step:N"),
        (["search", str(golden), "--status", "DONE"], "unknown status DONE"),
        (["entropy", str(golden), "--split", "extra"], "unknown split 'extra'"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, (argv, err)
    with pytest.raises(SystemExit) as exit_info:
        main(["ablation"])
    assert exit_info.value.code == 2


def test_analysis_never_imports_the_training_stack(golden: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import analysis, analysis.ablation, analysis.entropy, analysis.scaling\n"
        "import analysis.search, analysis.report, analysis.synthetic, analysis.figures\n"
        "from analysis.__main__ import main\n"
        f"assert main(['report', {str(golden)!r}, '-o', {str(tmp_path / 'r')!r}]) == 0\n"
        "banned = ('torch', 'ray', 'deepspeed', 'optuna', 'scipy', 'pandas')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in banned))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
    # And the module entry point itself, as users call it.
    cli = subprocess.run(
        [sys.executable, "-m", "analysis", "ablation", str(golden), "--experiment", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 2 and "unknown experiment 'nope'" in cli.stderr
