"""The metric-name registry: every name the worker's evaluation produces is registered, the
directions are the ones the analysis needs, a sweep's reported names are derived from its
configuration, and the end-of-sweep summary only asks for what the sweep reported."""

from __future__ import annotations

import datetime as dt

import pytest
import torch

from orchestrator.cli import end_of_sweep, summary_metrics
from orchestrator.run.parquet_sink import METRIC_PREFIXES
from orchestrator.sweep.search_space import trial_config
from orchestrator.sweep.sweep_file import SweepConfig
from records import metric_names as registry
from records.layout import METRICS_SCHEMA, trial_row, trials_schema
from records.metric_names import DECOMPOSITION_LEAVES, HELD_OUT_LEAVES
from records.writer import ResultsStore
from trainables.config import TrialConfig, evaluation_names
from trainables.data.records import Record
from trainables.losses import LOSSES, NumberVocab, param_columns
from trainables.metrics import CEDecomposition, DigitMetrics
from trainables.worker.evaluation import score_generation


def test_every_name_the_evaluation_computes_is_registered():
    vocab = NumberVocab(digit_ids=list(range(10)), dot_id=10)
    logits = torch.randn(2, 6, 12)
    labels = torch.tensor([[11, 1, 10, 5, 11, 3], [2, 3, 4, 11, 11, -100]])
    digits, decomposition = DigitMetrics(vocab), CEDecomposition()
    digits.update(logits, labels)
    decomposition.update(logits, labels)
    leaves = [*digits.compute(), *decomposition.compute()]
    leaves = [k for k in leaves if k not in ("n_digits", "n_tokens")]  # not reported
    for split in ("test", "extra"):
        for leaf in leaves:
            assert registry.family(registry.eval_metric(split, leaf)) is not None
    records = [Record("What is 1.5 + 2?", "3.5", 3.5), Record("What is 10 * 2?", "20", 20.0)]
    for benchmark in ("mathgen", "gsm8k", "held_out"):
        for leaf in score_generation(benchmark, records, ["3.5", "it is 21"]):
            registry.gen_metric(benchmark, leaf)  # raises KeyError when unregistered
    for loss in LOSSES.values():
        for part in loss.parts:
            registry.train_metric(part)
    with pytest.raises(KeyError, match=r"not in records\.metric_names"):
        registry.eval_metric("test", "digit_accuracy")
    with pytest.raises(KeyError, match="may not be named 'lr'"):
        registry.train_metric("lr")


def test_directions():
    expected = {
        "eval/test/digit_acc": "max",
        "eval/extra/digit_acc_int_3": "max",
        "eval/test/ce": "min",
        "eval/test/error_entropy": "min",
        "eval/test/log_confidence": None,  # noise, never "best"
        "eval/test/digit_entropy": None,
        "gen/gsm8k/exact_match": "max",
        "gen/mathgen/mae": "min",
        "gen/macc": "max",
        "train/loss": "min",
        "train/ce": "min",
        "train/aux": None,
        "train/tokens_seen": None,
        "perf/tokens_per_s": None,
        "model/params_non_embedding": None,
        "not/a/metric": None,
    }
    assert {name: registry.direction(name) for name in expected} == expected
    # the analysis's own selections are registered names
    for leaf in (*HELD_OUT_LEAVES, *DECOMPOSITION_LEAVES):
        assert registry.family(f"eval/test/{leaf}") is not None


def test_the_sink_stores_every_registered_group():
    assert METRIC_PREFIXES == ("eval/", "gen/", "model/", "perf/", "train/")


def test_reported_names_follow_the_configuration():
    base = {"search": {"losses": ["mle", "emo"]}}
    sweep = SweepConfig.model_validate(
        {**base, "trial": {"data": {"n_extra": 10}, "eval": {"generate_examples": 4}}}
    )
    names = sweep.reported_metrics()
    assert {"eval/extra/ce", "gen/mathgen_extra/mae", "gen/macc", "train/demd"} <= set(names)
    assert "train/aux" not in names  # no digit loss in this sweep
    assert "eval/test/digit_acc_int_7" in names and "eval/test/digit_acc_int_8" not in names
    assert "eval/test/digit_acc_dec_8" in names and "eval/test/digit_acc_dec_0" not in names
    quiet = SweepConfig.model_validate({**base, "trial": {"eval": {"generate_examples": 0}}})
    names = quiet.reported_metrics()
    assert not [n for n in names if n.startswith("gen/")]
    assert "eval/extra/ce" not in names
    assert not [n for n in quiet.reported_metrics(digits=False) if "digit" in n]


@pytest.mark.parametrize(
    "trial",
    [
        {"data": {"n_extra": 3}, "eval": {"generate_examples": 2}},
        {"data": {"n_extra": 0}, "eval": {"generate_examples": 0}},
        {"data": {"n_extra": 2}, "eval": {"generate_examples": 0}},
    ],
)
def test_evaluation_names_are_what_the_worker_builds(tmp_path, trial):
    from trainables.worker.trial_inputs import load_splits, load_tokenizer

    config = TrialConfig.model_validate(
        {
            **trial,
            "data": {**trial["data"], "modules": ["arithmetic__mul"], "n_train": 4, "n_test": 3},
            "cache_dir": str(tmp_path),
        }
    )
    splits = load_splits(config, load_tokenizer(config.model, config.cache_dir))
    assert evaluation_names(config) == (list(splits.eval_examples), list(splits.generation))


def test_the_summary_asks_only_for_what_the_sweep_reported(tmp_path, capsys):
    """With generation off, the end-of-sweep table used to ask for gen/macc and print
    "error: unknown metric 'gen/macc'; available: …" (a 60-name list) in a successful sweep."""
    sweep = SweepConfig.model_validate(
        {
            "experiment": "quiet",
            "mode": "grid",
            "grid": {"losses": ["mle", "del"]},
            "trial": {"eval": {"generate_examples": 0}},
        }
    )
    store = ResultsStore(str(tmp_path), "quiet")
    ts = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    rows, trials = [], []
    for i, loss in enumerate(("mle", "del")):
        trial = f"t{i}"
        trials.append(trial_row(trial, "TERMINATED", trial_config(sweep, {"loss": loss}, trial)))
        for metric in sweep.reported_metrics():
            if metric.startswith("eval/test/"):
                rows.append(
                    {
                        "trial_id": trial,
                        "attempt": 0,
                        "step": 4,
                        "metric": metric,
                        "value": 0.5,
                        "ts": ts,
                    }
                )
    store.write_part("metrics", rows, METRICS_SCHEMA)
    store.write_part("trials", trials, trials_schema(param_columns()))
    assert "gen/macc" not in summary_metrics(sweep, [r["metric"] for r in rows])
    assert end_of_sweep(str(tmp_path), sweep, 2, 0, digits=True, summary=True) == 0
    captured = capsys.readouterr()
    assert "unknown metric" not in captured.out + captured.err
    # the test split's panel, its columns named by their leaf
    assert "| mle |" in captured.out and "eval/test/" in captured.out
    assert "| digit_acc |" in captured.out
    assert "2 trials, 0 failed" in captured.out

    # --no-summary (a registered study's blinding): counts and where to look, no value.
    assert end_of_sweep(str(tmp_path), sweep, 2, 1, digits=True, summary=False) == 1
    held = capsys.readouterr().out
    assert "summary held back" in held and "2 trials, 1 failed" in held
    assert "0.5" not in held and "digit_acc" not in held and "| mle |" not in held


def test_every_command_that_runs_trials_can_hold_the_summary_back():
    # `extend` ends through the same printout as `sweep` (it failed without the flag).
    from orchestrator.cli import parse_args

    for argv in (["sweep", "s.yaml"], ["extend", "e", "--trials", "1"]):
        assert parse_args(argv).no_summary is False
        assert parse_args([*argv, "--no-summary"]).no_summary is True


def test_the_manipulation_check_is_registered_and_reported_only_for_an_auxiliary_term():
    for name in registry.AUX_GRADIENT_METRICS:
        assert registry.family(name).pattern == name  # its own family, not train/{part}
        assert registry.direction(name) is None  # a dose, not a goal: never ranked
    # no loss part may take one of its names
    assert {"aux_grad_ratio", "aux_grad_cos"} <= registry.TRAIN_RESERVED
    with pytest.raises(KeyError, match="may not be named 'aux_grad_ratio'"):
        registry.train_metric("aux_grad_ratio")
    plain = registry.expand(["test"], [], ["ce", "aux"])
    assert not set(registry.AUX_GRADIENT_METRICS) & set(plain)
    checked = registry.expand(["test"], [], ["ce", "aux"], auxiliary=True)
    assert set(registry.AUX_GRADIENT_METRICS) <= set(checked)
    assert set(checked) - set(plain) == set(registry.AUX_GRADIENT_METRICS)
