"""The conditional Optuna space, grid arms, trial configs and the persistent study (real Optuna
studies; the searcher is Ray Tune's)."""

from __future__ import annotations

import pickle
import re

import optuna
import pytest

from orchestrator.run.driver import build_searcher
from orchestrator.sweep.plan import study_storage, tune_runs
from orchestrator.sweep.search_space import (
    define_by_run,
    enqueue_params,
    grid_arms,
    trial_config,
    trial_params,
)
from orchestrator.sweep.sweep_file import SweepConfig
from records.layout import ExperimentPaths
from trainables.config import TrialConfig
from trainables.losses import LOSSES, loss_params

ALL_LOSSES = list(LOSSES)
SPACE = {
    "alpha": {"low": 0.01, "high": 1.0, "log": True},
    "decay_base": {"low": 1.0, "high": 1.5},
    "lam": {"low": 0.1, "high": 0.9},
    "eta": {"low": 0.0, "high": 1.0},
    "lr": {"low": 1e-4, "high": 1e-2, "log": True},
}


def search_sweep(**search) -> SweepConfig:
    return SweepConfig.model_validate(
        {"experiment": "t", "search": {"losses": ALL_LOSSES, "space": SPACE, **search}}
    )


def test_parameters_are_sampled_only_for_losses_that_take_them():
    space = define_by_run(search_sweep())
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    for _ in range(80):
        trial = study.ask()
        assert space(trial) is None
        params = trial.params
        loss = params["loss"]
        seen.add(loss)
        # exactly the searched parameters of this trial's loss, each under its loss's name
        searched = {f"{loss}.{p}" for p in loss_params(loss) if p in SPACE}
        assert set(params) == {"loss", "lr", *searched}, (loss, params)
        low, high = SPACE["alpha"]["low"], SPACE["alpha"]["high"]
        assert all(low <= v <= high for k, v in params.items() if k.endswith(".alpha"))
        plain = trial_params(params)
        assert set(plain) == {"loss", "lr", *(k.split(".")[1] for k in searched)}
        study.tell(trial, 0.0)
    assert seen == set(ALL_LOSSES)


def test_each_loss_has_its_own_alpha():
    """One `alpha` range in the sweep file is three Optuna parameters for ntl_was, dist2 and del
    (their sensible scales differ 30x; TPE must not pool them); a qualified key overrides the
    shorthand for its loss."""
    sweep = search_sweep(
        losses=["ntl_was", "dist2", "del"],
        space={
            "alpha": {"low": 0.01, "high": 1.0, "log": True},
            "del.alpha": {"low": 1e-3, "high": 0.05},
        },
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    space = define_by_run(sweep)
    distributions = {}
    for _ in range(30):
        trial = study.ask()
        space(trial)
        distributions.update(trial.distributions)
        study.tell(trial, 0.0)
    assert set(distributions) == {"loss", "ntl_was.alpha", "dist2.alpha", "del.alpha"}
    assert distributions["ntl_was.alpha"] == optuna.distributions.FloatDistribution(
        0.01, 1.0, log=True
    )
    assert distributions["del.alpha"] == optuna.distributions.FloatDistribution(1e-3, 0.05)


def test_enqueued_trials_are_translated_to_qualified_names():
    assert enqueue_params({"loss": "del", "alpha": 0.01, "lr": 1e-3}, ("mle", "del")) == {
        "loss": "del",
        "del.alpha": 0.01,
        "lr": 1e-3,
    }
    assert enqueue_params({"loss": "del", "alpha": 0.01}, ("del",)) == {"del.alpha": 0.01}
    assert trial_params({"loss": "del", "del.alpha": 0.01, "lr": 1e-3}) == {
        "loss": "del",
        "alpha": 0.01,
        "lr": 1e-3,
    }


def test_space_is_picklable_and_a_single_loss_is_a_constant():
    space = define_by_run(search_sweep(losses=["del"], space={"alpha": SPACE["alpha"]}))
    again = pickle.loads(pickle.dumps(space))
    trial = optuna.create_study().ask()
    assert again(trial) == {"loss": "del"}
    assert set(trial.params) == {"del.alpha"}


def test_grid_arms_are_the_cartesian_product():
    sweep = SweepConfig.model_validate(
        {
            "mode": "grid",
            "grid": {
                "losses": ["mle", "del"],
                "seeds": [0, 1, 2],
                "presets": ["tiny", "xs"],
                "params": {"del": {"alpha": 0.05}},
            },
        }
    )
    arms = grid_arms(sweep)
    assert len(arms) == 2 * 3 * 2
    assert {(a["loss"], a["seed"], a["preset"]) for a in arms} == {
        (loss, seed, preset)
        for loss in ("mle", "del")
        for seed in (0, 1, 2)
        for preset in ("tiny", "xs")
    }
    assert all(a.get("alpha") == (0.05 if a["loss"] == "del" else None) for a in arms)
    config = TrialConfig.model_validate(trial_config(sweep, arms[-1], "trial-1"))
    # the given parameter, and the defaults of the others: what the trial runs with
    assert config.loss.name == "del"
    assert config.loss.params == {"alpha": 0.05, "decay_base": 1.02, "distance": False}
    assert config.seed == 2 and config.model.preset == "xs" and config.trial_id == "trial-1"


def test_grid_variants_give_one_arm_each():
    # DEL with and without its distance term in one grid: two arms of one loss, per seed.
    sweep = SweepConfig.model_validate(
        {
            "mode": "grid",
            "grid": {
                "losses": ["mle", "del"],
                "seeds": [0, 1],
                "params": {"del": [{"alpha": 0.01}, {"alpha": 0.01, "distance": True}]},
            },
        }
    )
    arms = grid_arms(sweep)
    assert len(arms) == 2 * (1 + 2)
    del_arms = [a for a in arms if a["loss"] == "del"]
    assert sorted((a["seed"], a.get("distance", False)) for a in del_arms) == [
        (0, False),
        (0, True),
        (1, False),
        (1, True),
    ]
    configs = [
        TrialConfig.model_validate(trial_config(sweep, a, f"t{i}")) for i, a in enumerate(del_arms)
    ]
    assert {c.loss.params["distance"] for c in configs} == {False, True}


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"del": [{"alpha": 0.01}, {"alpha": -1.0}]}, "grid.params.del[1].alpha"),
        ({"del": [{"distance": True}, {"distance": True}]}, "listed twice"),
        ({"del": []}, "no arm"),
        ({"del": [{"lam": 0.5}]}, "grid.params.del[0].lam"),
    ],
)
def test_grid_variants_are_validated(params, key):
    with pytest.raises(ValueError, match=re.escape(key)):
        SweepConfig.model_validate(
            {"mode": "grid", "grid": {"losses": ["mle", "del"], "params": params}}
        )


def test_grid_learning_rates_are_an_axis_shared_or_per_preset():
    shared = SweepConfig.model_validate(
        {
            "mode": "grid",
            "grid": {"losses": ["mle"], "presets": ["tiny", "xs"], "lrs": [1e-3, 1e-2]},
        }
    )
    arms = grid_arms(shared)
    assert [(a["preset"], a["lr"]) for a in arms] == [
        ("tiny", 1e-3),
        ("tiny", 1e-2),
        ("xs", 1e-3),
        ("xs", 1e-2),
    ]
    # each size its own grid (a scaling study's): 3 rates for tiny, 1 for xs
    per_size = SweepConfig.model_validate(
        {
            "mode": "grid",
            "grid": {
                "losses": ["mle"],
                "seeds": [0, 1],
                "presets": ["tiny", "xs"],
                "lrs": {"tiny": [3e-3, 1e-2, 3e-2], "xs": [1e-3]},
            },
        }
    )
    arms = grid_arms(per_size)
    assert len(arms) == 2 * (3 + 1)
    configs = [TrialConfig.model_validate(trial_config(per_size, a, "t")) for a in arms]
    assert sorted({(c.model.preset, c.train.lr) for c in configs}) == [
        ("tiny", 3e-3),
        ("tiny", 1e-2),
        ("tiny", 3e-2),
        ("xs", 1e-3),
    ]
    # without lrs an arm has no lr key: the arms (and trial identities) of older grids stay
    plain = SweepConfig.model_validate({"mode": "grid", "grid": {"losses": ["mle"]}})
    assert grid_arms(plain) == [{"loss": "mle", "seed": 0}]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"lrs": []}, "grid.lrs: an empty list gives no trial"),
        ({"lrs": [1e-3, -1e-3]}, "grid.lrs: a learning rate is > 0, not -0.001"),
        ({"lrs": [1e-3, 1e-3]}, "grid.lrs: a rate is listed twice"),
        ({"lrs": {"tiny": [1e-3]}}, "grid.lrs: a mapping of presets to rates needs grid.presets"),
        (
            {"presets": ["tiny", "xs"], "lrs": {"tiny": [1e-3], "s": [1e-3]}},
            "grid.lrs: one entry per preset of grid.presets; missing: xs; not in grid.presets: s",
        ),
        ({"presets": ["tiny"], "lrs": {"tiny": [0.0]}}, "grid.lrs.tiny: a learning rate is > 0"),
    ],
)
def test_grid_learning_rates_are_validated(grid, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SweepConfig.model_validate({"mode": "grid", "grid": {"losses": ["mle"], **grid}})


def test_trial_config_takes_loss_params_seed_and_lr():
    sweep = search_sweep()
    cfg = trial_config(sweep, {"loss": "del", "alpha": 0.2, "decay_base": 1.1, "lr": 1e-3}, "abc")
    assert cfg["loss"] == {
        "name": "del",
        "params": {"alpha": 0.2, "decay_base": 1.1, "distance": False},
    }
    assert cfg["train"]["lr"] == 1e-3 and cfg["seed"] == 0 and cfg["experiment"] == "t"


def test_persistent_study_with_enqueued_trials(tmp_path):
    sweep = search_sweep(
        losses=["mle", "del"],
        space={"alpha": SPACE["alpha"]},
        enqueue=[{"loss": "mle"}, {"loss": "del", "alpha": 0.5}],
    )
    paths = ExperimentPaths(str(tmp_path), "t")
    storage = study_storage(sweep, paths)
    assert (tmp_path / "experiments" / "t" / "optuna.db").is_file()
    run = tune_runs(sweep)[0]
    searcher = build_searcher(sweep, run, storage)
    assert searcher is not None
    study = optuna.load_study(study_name="t", storage=storage)
    # Optuna keeps a queued trial's parameters as "fixed_params" until it is asked for.
    queued = study.get_trials(states=[optuna.trial.TrialState.WAITING])
    waiting = [t.system_attrs["fixed_params"] for t in queued]
    assert waiting == [{"loss": "mle"}, {"loss": "del", "del.alpha": 0.5}]
    # Building the searcher again (resume, extend) does not queue them twice.
    build_searcher(sweep, run, study_storage(sweep, paths))
    assert len(optuna.load_study(study_name="t", storage=storage).trials) == 2
