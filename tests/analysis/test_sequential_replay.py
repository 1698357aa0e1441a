"""A look's decision (analysis/sequential/decision.py) on hand-made differences, and the replay
of a design on stores (analysis/sequential/replay.py): a store written here through the sweep's
own writer (pairs run out of seed order, costs, two treatments under Holm), and the committed
stores of studies 5 and 3, whose outcomes docs/sequential.md and the studies' READMEs quote."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from analysis.__main__ import main
from analysis.selection import parse_value
from analysis.sequential.decision import evaluate_look
from analysis.sequential.design import sequential_test
from analysis.sequential.replay import DesignChoice, Question, replay
from analysis.trial_costs import trial_costs
from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from records.reader import load_trials, open_store
from tests.analysis_fixtures import at

STUDY5 = Path("studies/del_pretrained/results")
STUDY3 = Path("studies/del_plateau/results")
ACC = "eval/test/digit_acc"


def _with_t(n: int, t: float, sd: float = 0.01) -> list[float]:
    """n differences with sample sd `sd` and mean·√n/sd = t exactly."""
    z = np.linspace(-1.0, 1.0, n)
    z = (z - z.mean()) / z.std(ddof=1)
    return list(t * sd / math.sqrt(n) + sd * z)


def test_a_look_reads_its_decision_off_the_repeated_interval():
    test = sequential_test((4, 8), sesoi=0.02, hypotheses="both", spending="pocock")
    c = test.efficacy_t[0]
    diffs = _with_t(4, c + 0.01)
    look = evaluate_look(test, 1, diffs)
    mean, sd = float(np.mean(diffs)), float(np.std(diffs, ddof=1))
    assert look.decision == "superior" and look.stop
    assert look.t == pytest.approx(stats.ttest_1samp(diffs, 0.0).statistic)
    half = c * sd / 2
    assert look.ci == pytest.approx((mean - half, mean + half))
    assert look.ci[0] > 0
    assert evaluate_look(test, 1, [-d for d in diffs]).decision == "inferior"
    near = evaluate_look(test, 1, _with_t(4, c - 0.01))  # just short of the bound
    assert near.decision == "undecided" and not near.stop
    # a small mean and a small spread: the interval inside ±0.02
    tight = evaluate_look(test, 1, [0.001, -0.001, 0.0005, 0.0])
    assert tight.decision == "equivalent" and tight.ci[0] > -0.02 and tight.ci[1] < 0.02
    same = evaluate_look(test, 1, [0.01] * 4)
    assert same.decision == "undecided" and same.reason == "all differences equal: no test"


def test_futility_stops_early_but_the_last_look_ends_undecided():
    test = sequential_test((4, 8), sesoi=0.02, hypotheses="superiority", spending="pocock")
    f = test.futility_t[0]
    futile = evaluate_look(test, 1, _with_t(4, f - 0.1))
    assert futile.decision == "futile" and futile.stop
    assert evaluate_look(test, 1, _with_t(4, f + 0.1)).decision == "undecided"
    last = evaluate_look(test, 2, _with_t(8, 0.0))
    assert last.decision == "undecided" and last.stop
    with pytest.raises(ValueError, match="judges 4 paired seeds"):
        evaluate_look(test, 1, [0.1, 0.2, 0.3])


def test_a_lower_holm_level_raises_the_bound():
    test = sequential_test((4, 8), sesoi=0.02, hypotheses="superiority", spending="pocock")
    half = sequential_test(
        (4, 8), sesoi=0.02, hypotheses="superiority", spending="pocock", alpha=0.025
    )
    between = (test.efficacy_t[0] + half.efficacy_t[0]) / 2
    diffs = _with_t(4, between)
    assert evaluate_look(test, 1, diffs).decision == "superior"
    assert evaluate_look(test, 1, diffs, superiority=half).decision != "superior"


def _write_store(root: Path, treatments: dict[str, list[float]], order: dict[str, list[int]]):
    """mle and the given treatment arms (label -> del alpha) over seeds 0..n−1; each treatment
    trial's value is mle's (0.5) plus its difference; trials start in `order` per arm (a list
    of seeds, first to run first), mle first; wall_s = 100·(index + 1), cpu_s = 2·wall_s."""
    rows, states, k = [], [], 0
    arms = {"mle": None, **dict.fromkeys(treatments)}
    for arm in arms:
        alpha = None if arm == "mle" else float(arm)
        seeds = order.get(arm, list(range(len(next(iter(treatments.values()))))))
        for seed in seeds:
            trial = f"{arm}_s{seed}"
            value = 0.5 if alpha is None else 0.5 + treatments[arm][seed]
            wall = 100.0 * (k + 1)
            rows += [
                (trial, 0, 100, ACC, value, at(k)),
                (trial, 0, 100, "perf/wall_s", wall, at(k)),
                (trial, 0, 100, "perf/cpu_s", 2 * wall, at(k)),
            ]
            params = {} if alpha is None else {"alpha": alpha}
            config = trial_config(loss="mle" if alpha is None else "del", params=params, seed=seed)
            states.append(
                trial_row(trial, "TERMINATED", config, start=at(10 * k), end=at(10 * k + 5))
            )
            k += 1
    write_metric_rows(root, "seq", rows)
    write_trial_states(root, "seq", states)


def test_replay_orders_pairs_as_they_ran_and_prices_them(tmp_path: Path):
    n = 8
    late = _with_t(4, 50.0)  # the seeds that run first decide at look 1 (in seed order the
    # first four pairs would be all zeros: "all differences equal", no decision)
    diffs = [0.0] * (n - 4) + late[::-1]  # seeds 4..7 hold them; 0..3 are zeros
    order = {"0.1": list(range(n))[::-1]}  # del runs seed 7 first
    _write_store(tmp_path, {"0.1": diffs}, order)
    store = open_store(tmp_path)
    r = replay(store, Question(ACC, 0.02), DesignChoice(seeds=(4, 8), spending="pocock"))
    assert (r.decision, r.look, r.seeds, r.stopped) == ("superior", 1, 4, True)
    arm = r.arms[0]
    assert arm.arm == "del" and arm.estimate == pytest.approx(np.mean(late))
    # used: del seeds 7..4 and mle seeds 4..7; hours from each trial's own perf/wall_s
    costs = trial_costs(store).join(
        load_trials(store).select("trial_id", "seed", "loss"), on="trial_id"
    )
    used = costs.filter(pl.col("seed") >= 4)
    assert r.hours == pytest.approx(used["wall_s"].sum() / 3600)
    assert r.core_hours == pytest.approx(used["cpu_s"].sum() / 3600)
    assert r.fixed_hours == pytest.approx(costs["wall_s"].sum() / 3600)


def test_replay_judges_several_treatments_with_holm(tmp_path: Path):
    """Two doses: one far better, one between the α and the α/2 bound at the first look. Holm
    rejects the first at α/2, which lets the second be judged at α: superior too."""
    full = sequential_test((4, 8), sesoi=0.02, hypotheses="superiority", spending="pocock")
    half = sequential_test(
        (4, 8), sesoi=0.02, hypotheses="superiority", spending="pocock", alpha=0.025
    )
    between = (full.efficacy_t[0] + half.efficacy_t[0]) / 2
    doses = {"0.1": _with_t(4, 40.0) + [0.0] * 4, "0.2": _with_t(4, between) + [0.0] * 4}
    _write_store(tmp_path, doses, {})
    question = Question(ACC, 0.02, hypotheses="superiority")
    r = replay(open_store(tmp_path), question, DesignChoice(seeds=(4, 8), spending="pocock"))
    assert [(a.arm, a.decision, a.look) for a in r.arms] == [
        ("del (alpha=0.1)", "superior", 1),
        ("del (alpha=0.2)", "superior", 1),
    ]
    assert r.decision == "superior" and r.seeds == 4
    alone = replay(
        open_store(tmp_path),
        Question(ACC, 0.02, treatments=("del (alpha=0.2)",), hypotheses="superiority"),
        DesignChoice(seeds=(4, 8), spending="pocock"),
    )
    assert alone.arms[0].decision == "superior"  # one treatment: α itself


def test_the_paired_trials_count_each_reference_trial_once(tmp_path: Path):
    """What a pilot prices a trial at (fixed_hours over fixed_trials): two doses sharing mle's
    trials, 3 + 3 + 3; a dose with a pair fewer (no seed 2), 3 + 2 + 3."""
    one = DesignChoice(seeds=(2,), spending="none", futility=False)
    _write_store(tmp_path / "a", {"0.1": [0.0, 0.01, 0.02], "0.2": [0.01, 0.0, 0.02]}, {})
    assert replay(open_store(tmp_path / "a"), Question(ACC, 0.02), one).fixed_trials == 9
    _write_store(
        tmp_path / "b", {"0.1": [0.0, 0.01, 0.02], "0.2": [0.01, 0.0, 0.02]}, {"0.2": [0, 1]}
    )
    assert replay(open_store(tmp_path / "b"), Question(ACC, 0.02), one).fixed_trials == 8


def test_a_store_short_of_the_next_look_is_still_running(tmp_path: Path):
    _write_store(tmp_path, {"0.1": [0.001, -0.002, 0.0, 0.003, 0.001]}, {})
    r = replay(open_store(tmp_path), Question(ACC, 0.02), DesignChoice(seeds=(3, 6, 9)))
    assert not r.stopped and r.decision == "undecided"
    assert (r.look, r.seeds, r.next_seeds) == (1, 3, 6)


def test_study5_stops_for_equivalence_at_six_pairs():
    """The issue's hand replay: O'Brien–Fleming-type looks at 3, 6, 9 pairs stop study 5 for
    equivalence at 6 (α 0.05, ±0.02 exact match), for 2.7 of its 4.0 trial-hours."""
    store = open_store(STUDY5, ["del-pretrained-main"])
    question = Question("gen/mathgen/exact_match", 0.02)
    r = replay(store, question, DesignChoice(seeds=(3, 6, 9)))
    assert (r.decision, r.look, r.seeds) == ("equivalent", 2, 6)
    trials = load_trials(store).join(trial_costs(store), on=["experiment", "trial_id"])
    first_six = trials.filter(pl.col("seed") < 6)  # seeds ran 0..8 in order in both arms
    assert r.hours == pytest.approx(first_six["wall_s"].sum() / 3600)
    assert r.fixed_hours == pytest.approx(trials["wall_s"].sum() / 3600)
    assert r.hours == pytest.approx(2.705, abs=1e-3) and r.fixed_hours == pytest.approx(
        4.021, abs=1e-3
    )
    pocock = replay(store, question, DesignChoice(seeds=(3, 6, 9), spending="pocock"))
    assert (pocock.decision, pocock.seeds) == ("equivalent", 3)


def test_study3_doses_under_holm():
    """Study 3 (6 pairs, two doses): looks at 3 and 6 pairs find the paper's dose equivalent at
    6 and leave α 0.2 undecided, as the registered analysis did; no stored costs."""
    store = open_store(STUDY3, ["del-plateau-main"])
    doses = ("del (alpha=0.01)", "del (alpha=0.2)")
    question = Question(ACC, 0.02, parse_value("last:3"), treatments=doses)
    r = replay(store, question, DesignChoice(seeds=(3, 6)))
    assert {a.arm: (a.decision, a.seeds) for a in r.arms} == {
        "del (alpha=0.01)": ("equivalent", 6),
        "del (alpha=0.2)": ("undecided", 6),
    }
    assert r.decision == "undecided" and r.hours is None
    low = r.arms[0]
    assert low.estimate == pytest.approx(-0.0066, abs=1e-4)


def test_the_replay_command_prints_its_answer_as_json(capsys):
    argv = [
        "sequential-replay", str(STUDY5), "--metric", "gen/mathgen/exact_match",
        "--sesoi", "0.02", "--seeds", "3,6,9", "--format", "json",
    ]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["decision"], doc["look"], doc["seeds"]) == ("equivalent", 2, 6)
    assert doc["hours"] < doc["fixed_hours"]
    assert main([*argv[:-2], "--arms", "nope"]) == 2
    assert "unknown arm 'nope'" in capsys.readouterr().err
    assert main([*argv[:6], "--seeds", "3,3"]) == 2
