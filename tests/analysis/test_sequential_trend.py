"""A trend study's replay (analysis/sequential/trend.py through analysis/sequential/replay.py): on
a store with a known slope (tests/analysis/trend_fixtures.py, each seed's slope derived there by
hand), the replay pairs each size's DEL and MLE trials, regresses each seed's differences on
log10 N, and judges the slopes exactly as a look judges a plain study's differences; a seed
missing a size is left out with a note; fewer than 3 sizes or a trial without its N is refused.
Fast: no Ray."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.__main__ import main
from analysis.sequential.decision import evaluate_look
from analysis.sequential.design import sequential_test
from analysis.sequential.replay import DesignChoice, Question, replay
from analysis.trial_costs import trial_costs
from records.errors import ResultsError
from records.reader import load_trials, open_store, read_latest
from tests.analysis.trend_fixtures import CE, LATE, SIZES, SLOPES, write_trend_store

TREND = Question(CE, 0.01, trend="log_n")
STUDY4 = Path("studies/scaling_code/results")
LOOKS = DesignChoice(seeds=(3, 6), spending="pocock")


def test_the_replay_judges_each_seeds_slope_per_decade(tmp_path: Path):
    write_trend_store(tmp_path)
    r = replay(open_store(tmp_path), TREND, LOOKS)
    (arm,) = r.arms
    assert (arm.arm, arm.reference) == ("del", "mle")  # the sizes pool into one arm each
    assert arm.pairs == 6  # seeds 0..5; seed 6 lacks a size
    # CE is lower-better: the looks see −slope (positive: DEL's advantage grows with N)
    test = sequential_test((3, 6), sesoi=0.01, hypotheses="both", spending="pocock")
    expected = evaluate_look(test, 1, [-s for s in SLOPES[:3]])
    assert arm.looks[0].mean == pytest.approx(expected.mean)
    assert arm.looks[0].sd == pytest.approx(np.std(SLOPES[:3], ddof=1))
    assert arm.looks[0].ci == pytest.approx(expected.ci)
    assert (r.decision, r.look, r.seeds) == (expected.decision, 1, 3) == ("superior", 1, 3)
    assert arm.estimate == pytest.approx(np.mean(SLOPES[:3]))  # back in CE per decade
    assert arm.ci[1] < 0
    assert any(f"seed {LATE} has no pair at xs" in n for n in r.notes), r.notes
    assert any("per decade of N" in n for n in r.notes)


def test_a_trend_look_prices_every_size_of_its_seeds(tmp_path: Path):
    write_trend_store(tmp_path)
    store = open_store(tmp_path)
    r = replay(store, TREND, DesignChoice(seeds=(6,), spending="none", futility=False))
    assert r.decision == "superior" and r.arms[0].estimate == pytest.approx(np.mean(SLOPES))
    costs = trial_costs(store).join(load_trials(store).select("trial_id", "seed"), on="trial_id")
    paired = costs.filter(pl.col("seed") < LATE)  # 6 seeds × 3 sizes × 2 losses
    assert r.fixed_trials == paired.height == 36
    assert r.hours == pytest.approx(paired["wall_s"].sum() / 3600)
    assert r.fixed_hours == pytest.approx(r.hours)
    first = replay(store, TREND, LOOKS)  # stopped at 3 seeds: their 18 trials
    used = costs.filter(pl.col("seed") < 3)
    assert first.hours == pytest.approx(used["wall_s"].sum() / 3600)


def test_fewer_than_three_sizes_or_a_trial_without_its_size_is_refused(tmp_path: Path):
    write_trend_store(tmp_path / "two", sizes=SIZES[:2])
    with pytest.raises(ResultsError, match=r"ran 2 model size.*at least 3"):
        replay(open_store(tmp_path / "two"), TREND, LOOKS)
    write_trend_store(tmp_path / "uncounted", counts=False)
    with pytest.raises(ResultsError, match="reported no model/params_non_embedding"):
        replay(open_store(tmp_path / "uncounted"), TREND, LOOKS)
    write_trend_store(tmp_path / "ok")
    store = open_store(tmp_path / "ok")
    plain = replay(store, Question(CE, 0.01), LOOKS)  # without the trend: one arm a size
    assert sorted(a.arm for a in plain.arms) == sorted(
        f"del (lr={lr:g}, model={p})" for p, _, lr in SIZES
    )


def test_the_replay_command_says_slope_per_decade(tmp_path: Path, capsys):
    write_trend_store(tmp_path)
    argv = [
        "sequential-replay", str(tmp_path), "--metric", CE, "--sesoi", "0.01",
        "--seeds", "3,6", "--spending", "pocock", "--trend", "log_n",
    ]  # fmt: skip
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["decision"], doc["seeds"]) == ("superior", 3)
    assert doc["arms"][0]["estimate"] == pytest.approx(np.mean(SLOPES[:3]))
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "treatment − reference, slope per decade of N" in out and "Δ slope/decade" in out
    with pytest.raises(SystemExit) as stop:  # argparse: not a choice
        main([*argv[:-1], "log_d"])
    assert stop.value.code == 2 and "invalid choice: 'log_d'" in capsys.readouterr().err


def test_study4s_compensated_loss_widens_its_gap_with_n():
    """The trend path on a committed store of real trials: study 4's compensated loss against
    MLE, six sizes, seeds 10-12. The slopes are computed here again with numpy's polyfit from
    the store's final CE and each trial's own parameter count: +0.0108, +0.0038, +0.0091 nats
    per decade (studies/del_scale/README.md quotes them)."""
    store = open_store(STUDY4, ["scaling-code-main"])
    r = replay(store, TREND, DesignChoice(seeds=(3,), spending="none", futility=False))
    latest, _ = read_latest(store, [CE, "model/params_non_embedding"])
    final = latest.sort("step").group_by("trial_id", "metric").agg(pl.col("value").last())
    wide = final.pivot(on="metric", index="trial_id", values="value").join(
        load_trials(store).select("trial_id", "loss", "seed"), on="trial_id"
    )
    slopes = []
    for seed in (10, 11, 12):
        one = wide.filter(pl.col("seed") == seed).sort("model/params_non_embedding")
        arms = {loss: one.filter(pl.col("loss") == loss) for loss in ("compensated", "mle")}
        x = np.log10(arms["mle"]["model/params_non_embedding"].to_numpy())
        gap = (arms["compensated"][CE] - arms["mle"][CE]).to_numpy()
        slopes.append(np.polyfit(x, gap, 1)[0])
    assert slopes == pytest.approx([0.01078, 0.003754, 0.009063], abs=1e-5)
    (arm,) = r.arms
    assert arm.arm == "compensated" and arm.estimate == pytest.approx(np.mean(slopes))
    assert arm.looks[0].sd == pytest.approx(np.std(slopes, ddof=1))
    assert r.decision == "inferior" and arm.ci[0] > 0  # its CE rises against MLE's with N
