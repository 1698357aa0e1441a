"""The pilot a study runs and what it prices (orchestrator.study.stages, orchestrator.study.pilot):
`pilot.params` picks a loss's variants for the pilot (study 6 pilots only the larger DEL dose),
and a pilot of fewer arms than the main stage still prices every main-stage arm: its mean
trial-hours a trial times the main stage's trials a seed; `design.sd_bound` sizes the design at
the pilot sd's upper confidence limit. Fast: no Ray."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from analysis.sequential import fixed_seeds
from orchestrator.study.pilot import PilotArm, PilotSummary, summarise_pilot
from orchestrator.study.sizing import size_design, sizing_alpha
from orchestrator.study.stages import arms_per_seed, pilot_sweep, treatments
from orchestrator.study.study_file import load_study
from orchestrator.sweep.search_space import grid_arms
from tests.analysis.trend_fixtures import SLOPES, write_trend_store
from tests.orchestrator.study.test_study_file import STUDY, _write, trend_study

DOSES = [{"alpha": 0.05}, {"alpha": 0.2}]


def _two_doses(pilot_params=None) -> dict:
    doc = copy.deepcopy(STUDY)
    doc["sweep"]["grid"]["params"] = {"del": DOSES}
    if pilot_params is not None:
        doc["pilot"]["params"] = pilot_params
    return doc


def test_pilot_params_run_only_the_chosen_variant(tmp_path):
    study = load_study(_write(tmp_path, _two_doses({"del": {"alpha": 0.2}})))
    arms = grid_arms(pilot_sweep(study))
    assert sorted((a["loss"], a.get("alpha"), a["seed"]) for a in arms) == [
        ("del", 0.2, 100), ("del", 0.2, 101), ("mle", None, 100), ("mle", None, 101),
    ]  # fmt: skip
    assert arms_per_seed(study) == 3  # the main stage still runs mle and both doses


def test_without_pilot_params_the_pilot_runs_every_variant(tmp_path):
    study = load_study(_write(tmp_path, _two_doses()))
    assert len(grid_arms(pilot_sweep(study))) == 6 and arms_per_seed(study) == 3


def test_a_trend_pilot_is_sized_at_the_slopes_and_priced_at_every_size(tmp_path):
    """Study 7's form: the pilot's spread is the seeds' slopes' (hand-derived in
    tests/analysis/trend_fixtures.py), a trial's cost the mean over every size's trials, a seed
    costs a trial of each loss at each size, and the sizes are one treatment, not three."""
    doc = {**trend_study(), "pilot": {"seeds": list(range(6))}, "design": {"max_seeds": "pilot"}}
    study = load_study(_write(tmp_path, doc))
    write_trend_store(tmp_path / "results", study.pilot_experiment)
    pilot = summarise_pilot(str(tmp_path / "results"), study)
    (arm,) = pilot.arms
    assert (arm.arm, arm.pairs) == ("del", 6)
    assert arm.mean == pytest.approx(np.mean(SLOPES))
    assert arm.sd == pytest.approx(np.std(SLOPES, ddof=1))
    # 6 complete seeds x 3 sizes x 2 losses = 36 trials, the first 36 written: wall_s 100..3600
    hours = sum(100.0 * (k + 1) for k in range(36)) / 3600
    assert pilot.trial_hours == pytest.approx(hours)
    assert arms_per_seed(study) == 6
    assert pilot.hours_per_seed == pytest.approx(hours / 36 * 6)
    assert treatments(study) == 1 and sizing_alpha(study) == study.spec.alpha


def test_sd_bound_sizes_the_design_at_the_sds_upper_confidence_limit(tmp_path):
    # 2 pairs: 1 degree of freedom; χ²₁'s 20th percentile is z₀.₆² = 0.253347² = 0.064185 (a
    # square of a standard normal lies below c with probability 2Φ(√c) − 1 = 0.2), so the 80%
    # upper limit of the sd is s·√(1/0.064185) = 3.9472·s
    doc = copy.deepcopy(STUDY)
    doc["design"]["sd_bound"] = 0.8
    pilot = PilotSummary("p", 2, (PilotArm("del", "mle", 2, 0.0, 0.1),), 0.2, 0.1)
    bounded = size_design(load_study(_write(tmp_path, doc)), pilot)
    assert bounded.sd == pytest.approx(0.1 * 3.9472, rel=1e-4)
    plain = size_design(load_study(_write(tmp_path, STUDY)), pilot)
    assert plain.sd == 0.1 and bounded.fixed_seeds > plain.fixed_seeds


def test_two_treatments_are_sized_at_half_the_level_and_registered_at_it(tmp_path):
    # two doses: Holm's first step judges superiority at α/2, so the seeds are chosen there
    # (fixed design: analysis.paired_power at 0.025); the boundaries registered stay at α
    pilot = PilotSummary("p", 3, (PilotArm("del", "mle", 3, 0.0, 0.25),), 0.2, 0.1)
    one = size_design(
        load_study(_write(tmp_path, {**STUDY, "design": {"max_seeds": "pilot"}})), pilot
    )
    doc = _two_doses()
    doc["design"] = {"max_seeds": "pilot"}
    two = size_design(load_study(_write(tmp_path, doc)), pilot)
    assert one.fixed_seeds == fixed_seeds(0.25, 0.5, 0.05, 0.8, "both")
    assert two.fixed_seeds == fixed_seeds(0.25, 0.5, 0.025, 0.8, "both") > one.fixed_seeds
    assert two.alpha == one.alpha == 0.05 and two.seeds[-1] >= one.seeds[-1]
    assert two.power_reached >= 0.8
