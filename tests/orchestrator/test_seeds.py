"""Separate seeds: `seed` seeds model init, generated data and data order; `seeds.init`,
`seeds.data`, `seeds.order` override one each; a grid's control arm (`grid.controls`) moves some
of them while keeping `seed` (so it pairs with the other arms); the trials table records all
three, and stores and trial configs from before keep working."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import torch

from analysis.arms import assign_arms, baseline_arm
from orchestrator.sweep.search_space import grid_arms, trial_config, trial_params
from orchestrator.sweep.sweep_file import SweepConfig, SweepFileError, load_sweep
from records.layout import trial_row, trials_schema
from records.reader import config_columns, load_trials, open_store
from records.writer import ResultsStore
from tests.sweep_runs import write_sweep
from trainables.config import TrialConfig
from trainables.losses import param_columns
from trainables.worker.data_order import micro_batch_indices
from trainables.worker.trial_inputs import load_model_and_tokenizer, load_splits

STUDY_GRID = {
    "experiment": "seeds",
    "mode": "grid",
    "grid": {
        "losses": ["mle", "del"],
        "seeds": [0, 1, 2],
        "params": {"del": [{"alpha": 0.01}, {"alpha": 0.3}]},
        "controls": {"reorder": {"loss": "mle", "seed_offsets": {"order": 1000}}},
    },
}
"""Study 3's arms: mle, del (alpha .01), del (alpha X) and mle with another data order."""


def test_seed_sets_every_source_unless_overridden():
    plain = TrialConfig(seed=7)
    assert [plain.seed_for(s) for s in ("init", "data", "order")] == [7, 7, 7]
    moved = TrialConfig(seed=7, seeds={"order": 1007, "init": 3})
    assert [moved.seed_for(s) for s in ("init", "data", "order")] == [3, 7, 1007]
    with pytest.raises(ValueError, match="Extra inputs"):
        TrialConfig(seeds={"shuffle": 1})


def test_an_old_trial_config_without_seeds_still_validates():
    old = TrialConfig(seed=4).model_dump(mode="json")
    del old["seeds"], old["control"]  # what trials run before separate seeds carry
    config = TrialConfig.model_validate(old)
    assert config.seed_for("order") == 4 and config.control is None
    row = trial_row("t", "RUNNING", old)
    assert (row["seed_init"], row["seed_data"], row["seed_order"], row["control"]) == (
        4,
        4,
        4,
        None,
    )


def _inputs(tmp_path: Path, **seeds: int):
    config = TrialConfig.model_validate(
        {
            "seed": 5,
            "seeds": seeds,
            "cache_dir": str(tmp_path),
            "model": {"preset": "tiny", "vocab_size": 300},
            "data": {"modules": ["arithmetic__add_or_sub"], "n_train": 24, "n_test": 6},
        }
    )
    model, tokenizer = load_model_and_tokenizer(
        config.model, config.cache_dir, seed=config.seed_for("init")
    )
    splits = load_splits(config, tokenizer)
    order = [
        micro_batch_indices(
            seed=config.seed_for("order"),
            n_examples=len(splits.train),
            step=step,
            micro=0,
            rank=0,
            world_size=1,
            micro_batch_size=8,
            grad_accum=1,
        )
        for step in range(4)  # 32 positions: one epoch of 24 and the start of the next
    ]
    return model.state_dict(), splits, order


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_order_seed_moves_the_order_and_nothing_else(tmp_path):
    weights, splits, order = _inputs(tmp_path)
    weights_o, splits_o, order_o = _inputs(tmp_path, order=1005)
    assert _same_weights(weights, weights_o)
    assert splits.train == splits_o.train and splits.eval_examples == splits_o.eval_examples
    assert order != order_o
    # each is still a permutation of the 24 examples in its first epoch
    epoch, epoch_o = ([i for batch in o[:3] for i in batch] for o in (order, order_o))
    assert sorted(epoch) == sorted(epoch_o) == list(range(24))
    # the init and data seeds move only their own source
    weights_i, splits_i, order_i = _inputs(tmp_path, init=6)
    assert not _same_weights(weights, weights_i)
    assert splits_i.train == splits.train and order_i == order
    weights_d, splits_d, order_d = _inputs(tmp_path, data=6)
    assert _same_weights(weights, weights_d) and order_d == order
    assert splits_d.train != splits.train


def test_control_arm_is_parsed_and_resolved(tmp_path):
    sweep = load_sweep(write_sweep(tmp_path, STUDY_GRID))
    arms = grid_arms(sweep)
    assert len(arms) == 3 * 3 + 3  # (mle, del .01, del .3) x 3 seeds, then the control x 3
    controls = [a for a in arms if "control" in a]
    assert [a["seed"] for a in controls] == [0, 1, 2]
    configs = [trial_config(sweep, trial_params({"arm": a}), f"t{i}") for i, a in enumerate(arms)]
    seeds = [(c["seed"], c["seeds"], c["control"]) for c in configs]
    assert seeds[0] == (0, {"init": None, "data": None, "order": None}, None)
    assert seeds[-1] == (2, {"init": None, "data": None, "order": 1002}, "reorder")
    assert configs[-1]["loss"] == {"name": "mle", "params": {}}
    control = TrialConfig.model_validate(configs[-1])
    assert [control.seed_for(s) for s in ("init", "data", "order")] == [2, 2, 1002]
    # an order override in the base trial is where the offset starts from
    based = SweepConfig.model_validate({**STUDY_GRID, "trial": {"seeds": {"order": 50}}})
    moved = trial_config(based, trial_params({"arm": grid_arms(based)[-1]}), "x")
    assert moved["seeds"]["order"] == 1050


@pytest.mark.parametrize(
    ("control", "message"),
    [
        ({"loss": "ntl_was", "seed_offsets": {"order": 1}}, "grid.controls.c.loss: 'ntl_was'"),
        ({"loss": "mle", "seed_offsets": {}}, "grid.controls.c.seed_offsets: all zero"),
        ({"loss": "mle", "seed_offsets": {"shuffle": 1}}, "grid.controls.c.seed_offsets.shuffle"),
        (
            {"loss": "del", "params": {"beta": 1}, "seed_offsets": {"order": 1}},
            "grid.controls.c.params.beta",
        ),
        ({"loss": "mle"}, "grid.controls.c.seed_offsets: Field required"),
    ],
)
def test_bad_controls_name_the_key(tmp_path, control, message):
    data = {**STUDY_GRID, "grid": {**STUDY_GRID["grid"], "controls": {"c": control}}}
    with pytest.raises(SweepFileError, match=message):
        load_sweep(write_sweep(tmp_path, data))


def test_trial_control_is_set_only_by_the_grid(tmp_path):
    with pytest.raises(SweepFileError, match=r"trial\.control: set per trial by grid\.controls"):
        load_sweep(write_sweep(tmp_path, {**STUDY_GRID, "trial": {"control": "x"}}))


def test_trials_table_records_the_seeds_and_analysis_keeps_the_control_apart(tmp_path):
    sweep = SweepConfig.model_validate(STUDY_GRID)
    root = str(tmp_path / "results")
    store = ResultsStore(root, "seeds")
    rows = [
        trial_row(f"t{i}", "TERMINATED", trial_config(sweep, trial_params({"arm": a}), f"t{i}"))
        for i, a in enumerate(grid_arms(sweep))
    ]
    store.write_part("trials", rows, trials_schema(param_columns()))
    trials = load_trials(open_store(root))
    control = trials.filter(pl.col("control") == "reorder").sort("seed")
    assert control.select("seed", "seed_init", "seed_data", "seed_order").rows() == [
        (0, 0, 0, 1000),
        (1, 1, 1, 1001),
        (2, 2, 2, 1002),
    ]
    regular = trials.filter(pl.col("control").is_null())
    assert (regular["seed_order"] == regular["seed"]).all()
    assert not {"seed_init", "seed_data", "seed_order"} & set(config_columns(trials))
    arms = assign_arms(trials)
    assert sorted(arms.order) == sorted(
        ["mle", "mle (control=reorder)", "del (alpha=0.01)", "del (alpha=0.3)"]
    )
    assert arms.order[0] == "mle"
    # every arm, the control included, pairs with mle by seed
    for label in arms.order[1:]:
        assert baseline_arm(arms, label) == ("mle", None)
        seeds = arms.members.filter(pl.col("arm") == label)["seed_key"].sort().to_list()
        assert seeds == ["0", "1", "2"]


def test_baseline_by_column_never_picks_the_control(tmp_path):
    # with the learning rate as a key too, arms are matched by column: the control arm must not
    # be a second "mle" candidate for the del arms, and is itself compared with mle
    data = {**STUDY_GRID, "grid": {**STUDY_GRID["grid"], "params": {"del": {"alpha": 0.01}}}}
    sweep = SweepConfig.model_validate(data)
    rows = []
    for lr in (1e-3, 3e-3):
        for i, arm in enumerate(grid_arms(sweep)):
            config = trial_config(sweep, trial_params({"arm": {**arm, "lr": lr}}), f"{lr}-{i}")
            rows.append(trial_row(f"{lr}-{i}", "TERMINATED", config))
    root = str(tmp_path / "results")
    ResultsStore(root, "seeds").write_part("trials", rows, trials_schema(param_columns()))
    arms = assign_arms(load_trials(open_store(root)))
    assert baseline_arm(arms, "del (lr=0.001)") == ("mle (lr=0.001)", None)
    assert baseline_arm(arms, "mle (lr=0.003, control=reorder)") == ("mle (lr=0.003)", None)
    assert baseline_arm(arms, "mle (lr=0.003)") == (None, None)


def test_a_store_from_before_the_seed_columns_is_read():
    root = Path(__file__).resolve().parents[2] / "studies" / "del_cpu" / "results"
    trials = load_trials(open_store(root, ["del-cpu-ablation"]))
    assert trials.height == 45 and "seed_order" not in trials.columns
    arms = assign_arms(trials)
    assert "mle" in arms.order and not any("control" in a for a in arms.order)


CONTROL_SWEEP = {
    "experiment": "seeds",
    "mode": "grid",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {"modules": ["arithmetic__mul"], "n_train": 64, "n_test": 16, "max_length": 48},
        "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 0},
    },
    "grid": {
        "losses": ["mle"],
        "seeds": [3],
        "controls": {"reorder": {"loss": "mle", "seed_offsets": {"order": 1000}}},
    },
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 2},
}


@pytest.mark.slow
def test_a_grid_with_a_control_arm_runs_and_records_its_seeds(tmp_path):
    from tests.sweep_runs import numsweep

    results = tmp_path / "results"
    run = numsweep("sweep", write_sweep(tmp_path, CONTROL_SWEEP), "--results", results)
    assert run.returncode == 0, run.stderr[-3000:]
    trials = load_trials(open_store(results)).sort("control", nulls_last=False)
    assert trials.select("status", "seed", "seed_init", "seed_data", "seed_order", "control").rows(
        named=False
    ) == [("TERMINATED", 3, 3, 3, 3, None), ("TERMINATED", 3, 3, 3, 1003, "reorder")]
    metrics = pl.read_parquet(results / "metrics" / "experiment=seeds" / "*.parquet")
    by_trial = dict(zip(trials["control"].fill_null("-"), trials["trial_id"], strict=True))

    def value(control: str, metric: str, step: int) -> float:
        row = metrics.filter(
            (pl.col("trial_id") == by_trial[control])
            & (pl.col("metric") == metric)
            & (pl.col("step") == step)
        )
        return row["value"].item()

    # the same initial weights on the same held-out data: the same step-0 evaluation ...
    assert value("-", "eval/test/ce", 0) == value("reorder", "eval/test/ce", 0)
    # ... and another order of the same examples: another training loss
    assert value("-", "train/loss", 2) != value("reorder", "train/loss", 2)


def test_an_old_experiment_resumes_with_its_unchanged_sweep_file():
    # the committed study-1 manifest predates `seeds`, `control` and `grid.controls`: read with
    # their defaults, it still equals its sweep file, so `numsweep sweep` resumes rather than
    # refusing a "changed" config
    from orchestrator.cli import stored_sweep

    study = Path(__file__).resolve().parents[2] / "studies" / "del_cpu"
    stored = stored_sweep(str(study / "results"), "del-cpu-ablation")
    assert stored is not None and stored == load_sweep(study / "ablation.yaml")
