"""The scaling command on hand-built and generated stores: exact golden fits, the reproducible
interval (issue 10's defect), the What-Scales case (CE = EE + const: the saturating form, the
verdict, EE's falling share, SA and confidence not scaling), per-size aggregation, best learning
rate per size, the D and C axes, any metric, the CI level, and JSON."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from analysis.result import render, table_markdown
from analysis.scaling import scaling
from analysis.selection import ValueSpec
from bench.synthetic_store import generate_store
from records.reader import open_store
from tests.analysis_fixtures import write_power_law_store

PRESETS = {
    "tiny": 50_928,
    "xs": 406_368,
    "s": 2_361_792,
    "m": 9_098_560,
    "l": 29_010_432,
    "xl": 120_000_000,
}


def md_rows(markdown: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in markdown.splitlines()[2:]]


def table(result, name: str):
    return next(t for t in result.tables if t.name == name)


def test_golden_scaling_fit(tmp_path: Path) -> None:
    # ce = 3·N^−0.1 and EE = 1.8·N^−0.1 exactly: a = −0.1, c = ln 3 and ln 1.8, R² = 1.
    result = scaling(open_store(write_power_law_store(tmp_path)))
    fits = table(result, "scaling_power").data.sort("metric")
    ce, ee = fits.row(0, named=True), fits.row(1, named=True)
    assert ce["metric"] == "eval/test/ce" and ee["metric"] == "eval/test/error_entropy"
    assert ce["a"] == pytest.approx(-0.1) and ee["a"] == pytest.approx(-0.1)
    assert ce["c"] == pytest.approx(math.log(3.0)) and ee["c"] == pytest.approx(math.log(1.8))
    assert ce["r2"] == pytest.approx(1.0)
    assert (ce["sizes"], ce["points"], ce["a_ci_method"]) == (3, 3, "exact")
    assert ce["a_ci_low"] == pytest.approx(-0.1) and ce["follows_power_law"] is True
    sat = table(result, "scaling_saturating").data
    assert set(sat["remark"]) == {"fewer than 4 sizes (3): no saturating fit"}
    share = table(result, "scaling_ee_share").data
    assert share["ee_over_ce"].to_list() == pytest.approx([0.6, 0.6, 0.6])
    assert share["x"].to_list() == [1e6, 1e7, 1e8]
    trend = table(result, "scaling_ee_share_trend").data.row(0, named=True)
    assert trend["slope_per_decade"] == pytest.approx(0.0, abs=1e-12)
    # At step 100 every value is doubled: the intercept moves to ln 6.
    mid = table(scaling(open_store(tmp_path), value=ValueSpec("step", 100)), "scaling_power")
    assert mid.data.filter(pl.col("metric") == "eval/test/ce")["c"][0] == pytest.approx(math.log(6))
    # With the total count, N = N_non_embedding + 5e6: compare with scipy on those points.
    total = table(scaling(open_store(tmp_path), params="total"), "scaling_power").data
    n = np.array([1e6, 1e7, 1e8])
    ref = stats.linregress(np.log(n + 5e6), np.log(3.0 * n**-0.1))
    assert total.filter(pl.col("metric") == "eval/test/ce")["a"][0] == pytest.approx(ref.slope)


def test_scaling_refuses_two_sizes(tmp_path: Path) -> None:
    result = scaling(open_store(write_power_law_store(tmp_path, sizes=(1e6, 1e7))))
    rows = md_rows(table_markdown(table(result, "scaling_power")))
    # loss, metric, axis, sizes (points), then the fit's cells, the last one the reason
    assert rows[0][3:5] == ["2 (2)", "—"]
    assert rows[0][-1] == "fewer than 3 sizes (2): no fit"
    assert "no group has enough sizes for a fit (3 or more distinct sizes needed)" in result.notes


def test_scaling_fits_one_line_per_dataset_and_split(tmp_path: Path) -> None:
    sizes = {"a": 1_000_000, "b": 4_000_000, "c": 16_000_000, "d": 64_000_000}
    for name, dataset in (("arith", "mathgen"), ("words", "gsm8k")):
        truth = generate_store(
            tmp_path, experiment=name, dataset=dataset, losses=("mle", "del"), sizes=sizes, seed=9
        )
    fits = table(scaling(open_store(tmp_path)), "scaling_power").data
    # experiment and dataset vary, so they join loss in the group key; one row per split.
    assert fits.select("loss", "experiment", "dataset").unique().height == 2 * 2
    ee = fits.filter(pl.col("metric").str.ends_with("/error_entropy"))
    assert ee.height == 8 and set(ee["points"]) == {4}  # per-size means: 4 sizes, 4 points
    # The generator's error entropy is 1.2·N^−0.12 times 2% seed noise: the slope is recovered.
    assert ee["a"].to_numpy() == pytest.approx(truth.exponents["error_entropy"], abs=0.02)


def _reversed_copy(src: Path, dst: Path) -> Path:
    """The same store with every metrics part's rows in reverse order."""
    shutil.copytree(src, dst)
    for part in (dst / "metrics").rglob("part-*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.take(pa.array(np.arange(t.num_rows)[::-1])), part)
    return dst


def test_scaling_interval_is_reproducible(tmp_path: Path) -> None:
    # Issue 10: the points came in group_by order (not kept), so the same --seed gave other
    # bootstrap intervals from run to run. 6 sizes × 2 seeds over 5 parts with restored rows:
    # the per-size means (6 points: t-interval) and every trial (12 points: the bootstrap).
    sizes = dict(list(PRESETS.items()))
    root = tmp_path / "a"
    generate_store(
        root,
        losses=("mle", "del"),
        seeds=(0, 1),
        sizes=sizes,
        restored_fraction=0.2,
        trials_per_part=5,
        seed=4,
    )
    copy = _reversed_copy(root, tmp_path / "b")
    for aggregate in ("size", "trial"):
        runs = [
            render(scaling(open_store(r), aggregate=aggregate, n_boot=500, seed=7), "json")
            for r in (root, root, root, copy, copy)
        ]
        assert len(set(runs)) == 1, aggregate
        power = json.loads(runs[0])["tables"]
        methods = {
            r["a_ci_method"] for t in power if t["name"] == "scaling_power" for r in t["records"]
        }
        assert methods == ({"t"} if aggregate == "size" else {"bootstrap"})


@pytest.fixture(scope="module")
def what_scales(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A What-Scales-like sweep: 6 sizes × 3 seeds, little seed noise; EE = 1.2·(N/1e6)^−0.12,
    SA = 1.0, LC = 0.2, so CE = EE + 0.8."""
    root = tmp_path_factory.mktemp("what_scales")
    generate_store(root, losses=("mle",), seeds=(0, 1, 2), sizes=PRESETS, noise=0.003, seed=21)
    return root


def test_what_scales_case(what_scales: Path) -> None:
    result = scaling(open_store(what_scales))
    plain = {r["metric"]: r for r in table(result, "scaling_power").data.iter_rows(named=True)}
    sat = {r["metric"]: r for r in table(result, "scaling_saturating").data.iter_rows(named=True)}
    # The plain power law through CE is much shallower than EE's exponent ...
    assert plain["eval/test/error_entropy"]["a"] == pytest.approx(-0.12, abs=0.01)
    assert plain["eval/test/ce"]["a"] > -0.09
    # ... the saturating form recovers it, with the irreducible part E = 0.8.
    ce = sat["eval/test/ce"]
    assert ce["E"] == pytest.approx(0.8, abs=0.1) and ce["a"] == pytest.approx(-0.12, abs=0.02)
    assert ce["E_ci_low"] <= 0.8 <= ce["E_ci_high"] and ce["E_ci_low"] > 0
    assert ce["preferred"] == "saturating" and ce["f_test_p"] < 0.05
    assert sat["eval/test/error_entropy"]["preferred"] == "plain"
    # Self-alignment and confidence do not follow a power law; CE and EE do.
    for leaf, follows in (
        ("ce", True),
        ("error_entropy", True),
        ("self_alignment", False),
        ("log_confidence", False),
    ):
        assert plain[f"eval/test/{leaf}"]["follows_power_law"] is follows, leaf
    assert (
        plain["eval/test/log_confidence"]["a_ci_low"]
        < 0
        < plain["eval/test/log_confidence"]["a_ci_high"]
    )
    # The verdict: EE follows a power law better, with a bootstrap interval over seeds.
    verdict = {r["split"]: r for r in table(result, "scaling_verdict").data.iter_rows(named=True)}
    test = verdict["test"]
    assert test["winner"] == "EE" and test["delta_r2_ci_low"] > 0
    assert "within each size" in test["delta_r2_ci_how"]
    assert abs(test["extrapolation_ee"]) < abs(test["extrapolation_ce"])
    assert test["loo_ee"] < test["loo_ce"]
    assert test["ce_preferred_form"] == "saturating"
    # EE's share of CE falls with size.
    trend = {
        r["split"]: r for r in table(result, "scaling_ee_share_trend").data.iter_rows(named=True)
    }
    assert trend["test"]["trend"] == "falls" and trend["test"]["ci_high"] < 0
    text = render(result, "md")
    assert "EE (ΔR² CI > 0)" in text and "saturating" in text


def test_per_size_means_and_every_trial(what_scales: Path) -> None:
    store = open_store(what_scales)
    by_size = table(scaling(store, metrics=["eval/test/ce"]), "scaling_points").data
    assert by_size.height == 6 and set(by_size["trials"]) == {3}
    by_trial = scaling(store, metrics=["eval/test/ce"], aggregate="trial")
    assert table(by_trial, "scaling_points").data.height == 18
    row = table(by_trial, "scaling_power").data.row(0, named=True)
    assert (row["sizes"], row["points"]) == (6, 18)
    # The per-size means are the means of the trials' values at each size.
    trials = table(by_trial, "scaling_points").data
    means = trials.group_by("x").agg(pl.col("mean").mean()).sort("x")
    assert by_size.sort("x")["mean"].to_list() == pytest.approx(means["mean"].to_list(), rel=1e-12)


def test_best_learning_rate_per_size(tmp_path: Path) -> None:
    # Bigger models want smaller rates (best lr 1e-3·(N/1e6)^−0.5): the pick moves with size.
    sizes = {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000, "xl": 64_000_000}
    generate_store(
        tmp_path,
        losses=("mle",),
        seeds=(0, 1),
        sizes=sizes,
        lrs=(3e-4, 1e-3, 3e-3),
        lr_shift=-0.5,
        noise=0.002,
        seed=5,
    )
    result = scaling(open_store(tmp_path))
    chosen = table(result, "scaling_lr").data.sort("N")
    # Independently: the final eval/test/ce per trial, mean per (model, lr), the smallest wins.
    metrics = pl.read_parquet(tmp_path / "metrics", hive_partitioning=False)
    trials = pl.read_parquet(tmp_path / "trials").filter(pl.col("status") == "TERMINATED")
    final = (
        metrics.filter(pl.col("metric") == "eval/test/ce")
        .sort("step", "attempt", "ts")
        .group_by("trial_id")
        .last()
        .join(trials.select("trial_id", "model", "lr"), on="trial_id")
        .group_by("model", "lr")
        .agg(pl.col("value").mean())
        .sort("value")
        .group_by("model", maintain_order=True)
        .first()
    )
    expected = dict(final.select("model", "lr").iter_rows())
    assert dict(chosen.select("model", "lr").iter_rows()) == expected
    assert expected["s"] == 1e-3 and expected["xl"] == 3e-4
    assert any("learning rate varies" in n for n in result.notes)
    points = table(result, "scaling_points").data
    assert set(points["trials"]) == {2}  # only the chosen lr's two seeds per size
    pooled = scaling(open_store(tmp_path), lr="pool")
    assert table(pooled, "scaling_points").data["trials"].max() == 6
    assert any(n.startswith("sizes pooled over lr") for n in pooled.notes)


def test_tokens_and_compute_axes(tmp_path: Path) -> None:
    # A data-scaling sweep: 3 models × 4 step budgets; EE ∝ N^−0.12 · D^−0.08.
    sizes = {"s": 1_000_000, "m": 4_000_000, "l": 16_000_000}
    truth = generate_store(
        tmp_path,
        losses=("mle",),
        seeds=(0, 1),
        sizes=sizes,
        steps=(100, 200, 400, 800),
        noise=0.002,
        splits=("test",),
        benchmarks=(),
        seed=6,
    )
    result = scaling(open_store(tmp_path), metrics=["eval/test/error_entropy", "eval/test/ce"])
    assert result.settings["axes"] == ["N", "D", "C"]
    power = table(result, "scaling_power").data.filter(
        pl.col("metric") == "eval/test/error_entropy"
    )
    n_lines = power.filter(pl.col("axis") == "N")
    assert sorted(n_lines["at"]) == ["step 100", "step 200", "step 400", "step 800"]
    assert n_lines["a"].to_numpy() == pytest.approx(truth.exponents["error_entropy"], abs=0.01)
    d_lines = power.filter(pl.col("axis") == "D")
    assert sorted(d_lines["at"]) == ["model l", "model m", "model s"]
    assert d_lines["a"].to_numpy() == pytest.approx(
        truth.exponents["error_entropy_tokens"], abs=0.01
    )
    c_line = power.filter(pl.col("axis") == "C").row(0, named=True)
    assert c_line["at"] == "frontier" and c_line["a"] < 0
    # D is the tokens seen at the value's step: 800 steps of ~640 tokens.
    points = table(result, "scaling_points").data.filter(
        (pl.col("axis") == "D") & (pl.col("step") == 800)
    )
    assert points["x"].to_numpy() == pytest.approx(800 * 640, rel=0.05)
    # A fixed-budget sweep fits against N only, and says why.
    fixed = scaling(open_store(write_power_law_store(tmp_path / "fixed")))
    assert fixed.settings["axes"] == ["N"]
    assert any("no train/tokens_seen" in n for n in fixed.notes)


def test_any_metric_and_the_confidence_level(what_scales: Path) -> None:
    store = open_store(what_scales)
    result = scaling(store, metrics=["gen/mathgen/mae"], level=0.9)
    power = table(result, "scaling_power")
    assert "a (90% CI)" in power.columns and power.data["metric"].to_list() == ["gen/mathgen/mae"]
    wide = table(scaling(store, metrics=["gen/mathgen/mae"]), "scaling_power").data.row(
        0, named=True
    )
    narrow = power.data.row(0, named=True)
    assert narrow["a"] == pytest.approx(wide["a"], rel=1e-12)
    assert narrow["a_ci_high"] - narrow["a_ci_low"] < wide["a_ci_high"] - wide["a_ci_low"]
    assert not any(t.name == "scaling_verdict" for t in result.tables)  # needs CE and EE
    doc = json.loads(render(scaling(store), "json"))
    verdict = next(t for t in doc["tables"] if t["name"] == "scaling_verdict")
    assert {
        "r2_ce",
        "r2_ee",
        "delta_r2",
        "delta_r2_ci_low",
        "loo_ce",
        "extrapolation_ee",
        "winner",
    } <= set(verdict["records"][0])
    assert doc["settings"]["aggregate"] == "size" and doc["settings"]["level"] == 0.95
