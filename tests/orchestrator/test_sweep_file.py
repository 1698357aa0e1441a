"""The sweep file: every shipped config validates; bad input names the file and the key, exits 2,
and launches and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main
from orchestrator.sweep.sweep_file import SweepConfig, SweepFileError, apply_override, load_sweep

ROOT = Path(__file__).resolve().parents[2]
# A study's study.yaml names a sweep file and is not one (tests/orchestrator/study checks them).
SHIPPED = sorted((ROOT / "orchestrator" / "configs").glob("*.yaml")) + sorted(
    p for p in (ROOT / "studies").glob("**/*.yaml") if p.name != "study.yaml"
)


def test_there_are_shipped_configs():
    assert any(p.name == "demo.yaml" for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_config_validates(path):
    sweep = load_sweep(path)
    # named (not the default experiment, where every unnamed sweep's results would meet) and
    # plain data: the validated config survives its JSON form unchanged
    assert sweep.experiment != "default", path
    assert SweepConfig.model_validate_json(sweep.model_dump_json()) == sweep


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        ({"trial": {"train": {"stpes": 10}}}, "trial.train.stpes", "Extra inputs"),
        ({"trial": {"train": {"steps": "many"}}}, "trial.train.steps", "integer"),
        ({"trial": {"train": {"lr": -1}}}, "trial.train.lr", "greater than 0"),
        (
            {"search": {"space": {"alpha": {"low": 2, "high": 1}}}},
            "search.space.alpha",
            "low <= high",
        ),
        (
            {"search": {"space": {"alpha": {"low": 0, "high": 1, "log": True}}}},
            "search.space.alpha",
            "low > 0",
        ),
        ({"search": {"losses": ["mle", "nope"]}}, "search.losses", "unknown loss 'nope'"),
        (
            {"search": {"losses": ["mle"], "space": {"alpha": {"low": 0.1, "high": 1}}}},
            "search.space.alpha",
            "no loss in search.losses takes 'alpha'",
        ),
        (
            {"mode": "grid", "grid": {"losses": ["mle"], "params": {"mle": {"alpha": 0.1}}}},
            "grid.params.mle.alpha",
            "does not take 'alpha'",
        ),
        (
            {"search": {"enqueue": [{"loss": "mle", "decay_base": 1.1}]}},
            "search.enqueue[0].decay_base",
            "does not take",
        ),
        (
            {"search": {"losses": ["del"], "space": {"mle.alpha": {"low": 0.1, "high": 1}}}},
            "search.space.mle.alpha",
            "loss 'mle' is not in search.losses",
        ),
        (
            {"search": {"losses": ["mle", "del"], "space": {"del.eta": {"low": 0.1, "high": 1}}}},
            "search.space.del.eta",
            "loss 'del' does not take 'eta'",
        ),
        (
            {"search": {"losses": ["del"], "space": {"distance": {"low": 0, "high": 1}}}},
            "search.space.distance",
            "del.distance is a flag",
        ),
        (
            {"search": {"losses": ["del"], "enqueue": [{"loss": "del", "alpha": 0.01}]}},
            "search.enqueue[0].alpha",
            "del.alpha is not searched",
        ),
        (
            {"mode": "grid", "grid": {"losses": ["del"], "params": {"del": {"distance": 1}}}},
            "grid.params.del.distance",
            "del.distance allows true or false",
        ),
        ({"resources": {"workers_per_trial": 0}}, "resources.workers_per_trial", "greater than"),
        ({"experiment": "a/b"}, "experiment", "pattern"),
    ],
)
def test_bad_sweep_files_name_file_and_key(tmp_path, data, key, message):
    path = write(tmp_path, data)
    with pytest.raises(SweepFileError) as err:
        load_sweep(path)
    text = str(err.value)
    assert str(path) in text and key in text and message in text, text


def test_the_docs_sweep_examples_validate():
    import re

    found = {}
    for name in ("README.md", "docs/sweeps.md"):
        text = (ROOT / name).read_text()
        examples = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", text, re.S)]
        found[name] = [e for e in examples if isinstance(e, dict) and "mode" in e]
        for example in found[name]:
            SweepConfig.model_validate(example)
    assert len(found["docs/sweeps.md"]) >= 2 and len(found["README.md"]) >= 1


def test_not_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trial: [unclosed")
    with pytest.raises(SweepFileError, match="not valid YAML"):
        load_sweep(bad)
    with pytest.raises(SweepFileError, match="no such sweep file"):
        load_sweep(tmp_path / "missing.yaml")


def test_dotted_overrides(tmp_path):
    path = write(tmp_path, {"experiment": "x"})
    sweep = load_sweep(path, ["train.lr=3e-4", "search.num_trials=64", "trial.data.n_train=10"])
    assert sweep.trial.train.lr == 3e-4
    assert sweep.search.num_trials == 64
    assert sweep.trial.data.n_train == 10
    # a qualified search-space key is one key, though it has a dot
    sweep = load_sweep(path, ["search.space.del.alpha={low: 0.001, high: 0.1, log: true}"])
    assert sweep.search.space["del.alpha"].high == 0.1 and sweep.search.space["del.alpha"].log
    with pytest.raises(SweepFileError, match="KEY=VALUE"):
        apply_override({}, "train.lr")
    with pytest.raises(SweepFileError, match=r"trial.train.nope"):
        load_sweep(path, ["train.nope=1"])


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    path = write(tmp_path, {"search": {"losses": ["mle", "nope"]}})
    results = tmp_path / "results"
    assert main(["sweep", str(path), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "unknown loss 'nope'" in err and str(path) in err
    assert not results.exists()


def test_cli_rejects_digit_loss_on_multi_digit_tokenizer(tmp_path, capsys):
    """A pretrained model whose tokenizer merges digits: `del` is refused before launch."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.trained_tokenizers import byte_level_bpe

    tokenizer = byte_level_bpe(split_digits=False)
    tokenizer.eos_token = "<|endoftext|>"
    model_dir = tmp_path / "gpt2-style"
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    LlamaForCausalLM(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    path = write(
        tmp_path,
        {
            "trial": {"model": {"preset": None, "path": str(model_dir)}},
            "search": {"losses": ["mle", "del"]},
        },
    )
    results = tmp_path / "results"
    assert main(["sweep", str(path), "--results", str(results), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "loss 'del' needs single-digit tokens" in err
    assert str(path) in err
    assert not results.exists()


def test_dry_run_prints_the_plan_and_starts_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    demo = ROOT / "orchestrator" / "configs" / "demo.yaml"
    assert main(["sweep", str(demo), "--results", str(results), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Tune run demo: 4 Optuna trials over mle, ntl_was, dist2, del" in out
    assert "  mle: samples nothing" in out
    assert "  del: samples del.alpha [0.01, 1] log, del.decay_base [1, 1.5]" in out
    assert "  ntl_was: samples ntl_was.alpha [0.01, 1] log" in out
    assert "1 worker(s) x 1 CPU" in out and "trial(s) at a time" in out
    assert not results.exists()


def test_unusable_results_root_exits_2_and_writes_nothing(tmp_path, capsys):
    path = write(tmp_path, {"experiment": "x"})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert main(["sweep", str(path), "--results", str(blocker / "results")]) == 2
    assert f"{blocker} is a file, not a directory" in capsys.readouterr().err
    assert blocker.read_text() == "not a directory"


def test_conflicting_zero_stage_is_an_error():
    from trainables.config import TrainConfig
    from trainables.worker.deepspeed_config import deepspeed_config

    train = TrainConfig(zero_stage=2, deepspeed_config={"zero_optimization": {"stage": 3}})
    with pytest.raises(ValueError, match=r"zero_optimization.stage=3 but train.zero_stage=2"):
        deepspeed_config(train, world_size=1)
