"""Each silent failure of issue 11, through the real command line (`numsweep sweep --dry-run`,
no Ray started): before, each of these passed with exit 0 and only failed (or wasted the search)
inside the running sweep; now each is exit 2 before anything starts, naming the file, the key and
what is allowed, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main

BASE = {
    "experiment": "bad",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {"modules": ["arithmetic__mul"], "n_train": 8, "n_test": 4},
        "eval": {"generate_examples": 4},
    },
}


def write(tmp_path: Path, **sections) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({**BASE, **sections}))
    return path


def dry_run(tmp_path: Path, path: Path, *overrides: str) -> int:
    return main(["sweep", str(path), "--dry-run", "--results", str(tmp_path / "r"), *overrides])


@pytest.mark.parametrize(
    ("sections", "key", "allowed"),
    [
        (
            {"search": {"losses": ["del"], "space": {"decay_base": {"low": -3, "high": 0}}}},
            "search.space.decay_base",
            "del.decay_base allows (0, inf)",
        ),
        (
            {"search": {"losses": ["del"], "space": {"del.alpha": {"low": -1, "high": 0.5}}}},
            "search.space.del.alpha",
            "del.alpha allows [0, inf)",
        ),
        (
            {"search": {"losses": ["compensated"], "space": {"lam": {"low": 0.0, "high": 0.5}}}},
            "search.space.lam",
            "compensated.lam allows (0, 1)",
        ),
        (
            {
                "mode": "grid",
                "grid": {"losses": ["del"], "params": {"del": {"alpha": -5, "decay_base": -1}}},
            },
            "grid.params.del.alpha",
            "del.alpha allows [0, inf)",
        ),
        (
            {"mode": "grid", "grid": {"losses": ["del"], "params": {"del": {"decay_base": -1}}}},
            "grid.params.del.decay_base",
            "del.decay_base allows (0, inf)",
        ),
        (
            {"search": {"losses": ["mle", "del"], "enqueue": [{"loss": "del", "alpha": -0.1}]}},
            "search.enqueue[0].alpha",
            "del.alpha allows [0, inf)",
        ),
        (
            {"mode": "grid", "grid": {"losses": ["mle"], "lrs": [3e-3, 0.0]}},
            "grid.lrs",
            "a learning rate is > 0, not 0.0",
        ),
    ],
)
def test_out_of_range_loss_parameters_exit_2(tmp_path, capsys, sections, key, allowed):
    path = write(tmp_path, **sections)
    assert dry_run(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert str(path) in err and key in err and allowed in err, err
    assert not (tmp_path / "r").exists()


def test_objective_typo_exits_2_with_close_matches(tmp_path, capsys):
    path = write(
        tmp_path,
        search={"losses": ["mle"], "objectives": [{"metric": "eval/tset/digit_accc"}]},
    )
    assert dry_run(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert "search.objectives[0].metric" in err and str(path) in err
    assert "unknown metric 'eval/tset/digit_accc'" in err
    assert "did you mean" in err and "eval/test/digit_acc" in err, err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("overrides", "metric", "why"),
    [
        (["eval.generate_examples=0"], "gen/macc", "eval.generate_examples is 0"),
        (["eval.generate_examples=0"], "gen/mathgen/exact_match", "eval.generate_examples is 0"),
        ([], "eval/extra/ce", "data.n_extra is 0"),
        ([], "gen/mathgen_extra/mae", "data.n_extra is 0"),
        ([], "gen/gsm8k/exact_match", "no benchmark 'gsm8k' in data.benchmarks"),
        ([], "train/demd", "no loss of this sweep returns the part 'demd'"),
    ],
)
def test_objective_the_evaluation_cannot_produce_exits_2(tmp_path, capsys, overrides, metric, why):
    path = write(tmp_path, search={"losses": ["mle", "del"], "objectives": [{"metric": metric}]})
    assert dry_run(tmp_path, path, *overrides) == 2
    err = capsys.readouterr().err
    assert f"search.objectives[0].metric: {metric!r} is never reported" in err, err
    assert why in err, err


def test_early_stopping_metric_is_checked_the_same_way(tmp_path, capsys):
    path = write(tmp_path, early_stopping={"metric": "eval/test/cee", "mode": "min"})
    assert dry_run(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert "early_stopping.metric" in err and "unknown metric 'eval/test/cee'" in err
    assert "eval/test/ce" in err


def test_objectives_that_the_sweep_produces_pass(tmp_path, capsys):
    objectives = [
        {"metric": "eval/test/digit_acc_int_2", "mode": "max"},
        {"metric": "gen/mathgen/place_acc_dec_1", "mode": "max"},
        {"metric": "gen/macc", "mode": "max"},
        {"metric": "train/aux", "mode": "min"},
    ]
    path = write(tmp_path, search={"losses": ["del"], "objectives": objectives})
    assert dry_run(tmp_path, path) == 0, capsys.readouterr().err


def test_overrides_may_follow_the_flags(tmp_path, capsys):
    path = write(tmp_path, search={"losses": ["mle"]})
    assert dry_run(tmp_path, path, "experiment=renamed", "search.num_trials=3") == 0
    out = capsys.readouterr().out
    assert "experiment renamed: mode search" in out
    assert "3 Optuna trials" in out
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", str(path), "--dry-run", "--nope"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --nope" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("sections", "overrides", "key"),
    [
        (
            {"mode": "grid", "grid": {"losses": ["mle"], "presets": ["tiny", "h33l1"]}},
            [],
            "grid.presets",
        ),
        ({"search": {"losses": ["mle"]}}, ["trial.model.preset=tinyy"], "trial.model.preset"),
    ],
)
def test_unknown_preset_exits_2_before_launch(tmp_path, capsys, sections, overrides, key):
    # before: the sweep started and every trial failed in its worker ("unknown model preset")
    path = write(tmp_path, **sections)
    assert dry_run(tmp_path, path, *overrides) == 2
    err = capsys.readouterr().err
    assert str(path) in err and f"{key}: unknown model preset" in err and "h32l1, tiny" in err, err
    assert not (tmp_path / "r").exists()


def test_preflight_needs_no_model_weights(tmp_path, capsys):
    """A pretrained model directory with only config.json and the tokenizer (no weights): the
    dry run checks tokenizer and config, and never loads the weights."""
    from transformers import LlamaConfig

    from tests.trained_tokenizers import byte_level_bpe

    tokenizer = byte_level_bpe(split_digits=True)
    tokenizer.eos_token = "<|endoftext|>"
    model_dir = tmp_path / "no-weights"
    LlamaConfig(vocab_size=len(tokenizer), hidden_size=4096, num_hidden_layers=32).save_pretrained(
        model_dir
    )
    tokenizer.save_pretrained(model_dir)
    assert not list(model_dir.glob("*.safetensors")) and not list(model_dir.glob("*.bin"))
    path = write(
        tmp_path,
        trial={**BASE["trial"], "model": {"preset": None, "path": str(model_dir)}},
        search={"losses": ["mle", "del"]},
    )
    assert dry_run(tmp_path, path) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "model " + str(model_dir) in out and "llama" in out
