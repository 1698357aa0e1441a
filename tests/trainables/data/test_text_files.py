"""A text/code corpus (`data.source: text_files`): files from globs (the standard library of this
interpreter, or files written here), a BPE trained on the training documents and cached,
documents split by the data seed and packed into fully scored sequences, the decomposition at a
fixed number of scored tokens, the corpus in the manifest, and bad input refused before launch."""

from __future__ import annotations

import hashlib
import math
import sysconfig
from pathlib import Path

import pytest
import torch
import yaml

from orchestrator.cli import main
from orchestrator.run.driver import manifest
from orchestrator.sweep.objectives import check_metric
from orchestrator.sweep.sweep_file import SweepConfig
from trainables.config import DataConfig, TrialConfig, evaluation_names
from trainables.data import text_files
from trainables.data.batching import IGNORE_INDEX
from trainables.models.presets import build_model
from trainables.models.text_tokenizer import build_text_tokenizer
from trainables.worker.evaluation import teacher_forced
from trainables.worker.trial_inputs import (
    check_tokenizer_for_loss,
    first_scored_tokens,
    load_splits,
)

STDLIB = Path(sysconfig.get_paths()["stdlib"])
EMAIL = {"source": "text_files", "paths": ["{stdlib}/email/**/*.py"], "n_test": 4}
"""A small real corpus: the email package of this interpreter's standard library."""


def data(**given) -> DataConfig:
    return DataConfig.model_validate({**EMAIL, **given})


@pytest.fixture(scope="module")
def email_tokenizer(tmp_path_factory):
    train, _ = text_files.split_documents(text_files.read_documents(data()), data(), 0)
    return build_text_tokenizer(400, tmp_path_factory.mktemp("tok"), train)


def test_globs_expand_the_stdlib_and_exclude_files():
    files = text_files.corpus_files(data())
    expected = sorted(p.resolve() for p in STDLIB.glob("email/**/*.py"))
    assert files == expected and len(files) > 10
    kept = text_files.corpus_files(data(exclude=["*/mime/*"]))
    assert kept == [p for p in expected if "/mime/" not in str(p)] and len(kept) < len(files)
    with pytest.raises(ValueError, match=r"data\.paths: '\{stdlib\}/nothing-here/\*\.py'"):
        text_files.corpus_files(data(paths=["{stdlib}/nothing-here/*.py"]))
    with pytest.raises(ValueError, match=r"matches no file outside data\.exclude"):
        text_files.corpus_files(data(exclude=["*"]))


def test_split_is_by_document_and_follows_the_data_seed():
    documents = text_files.read_documents(data())
    train, test = text_files.split_documents(documents, data(), 0)
    assert len(test) == 4 and len(train) == len(documents) - 4
    assert {d.path for d in train}.isdisjoint({d.path for d in test})
    again, test_again = text_files.split_documents(documents, data(), 0)
    assert again == train and test_again == test
    _, other = text_files.split_documents(documents, data(), 1)
    assert {d.path for d in other} != {d.path for d in test}
    capped, _ = text_files.split_documents(documents, data(n_train=3), 0)
    assert capped == train[:3]
    with pytest.raises(ValueError, match=r"not more than data\.n_test=500"):
        text_files.split_documents(documents, data(n_test=500), 0)
    first = documents[0]
    assert first.sha256 == hashlib.sha256(Path(first.path).read_bytes()).hexdigest()


def test_packing_scores_every_token_of_the_document_stream(email_tokenizer):
    documents = text_files.read_documents(data())[:3]
    sequences = text_files.pack(email_tokenizer, documents, 32)
    tok = email_tokenizer
    stream = []
    for d in documents:  # built independently: one encode call per document
        stream += [
            tok.bos_token_id,
            *tok.encode(d.text, add_special_tokens=False),
            tok.eos_token_id,
        ]
    assert len(sequences) == len(stream) // 32
    assert all(s["labels"] == s["input_ids"] and len(s["input_ids"]) == 32 for s in sequences)
    assert [i for s in sequences for i in s["input_ids"]] == stream[: 32 * len(sequences)]
    # the text comes back from the tokens: byte-level BPE loses nothing
    assert tok.decode(stream[1 : stream.index(tok.eos_token_id)]) == documents[0].text


def test_tokenizer_is_cached_by_files_and_size(tmp_path):
    documents = text_files.read_documents(data())[:6]
    first = build_text_tokenizer(300, tmp_path, documents)
    built = sorted(p.name for p in tmp_path.iterdir())
    again = build_text_tokenizer(300, tmp_path, documents)
    assert sorted(p.name for p in tmp_path.iterdir()) == built and len(built) == 1
    assert again.get_vocab() == first.get_vocab() and len(first) == 300
    build_text_tokenizer(300, tmp_path, documents[:5])  # other files: another entry
    build_text_tokenizer(320, tmp_path, documents)  # another size: another entry
    assert len(list(tmp_path.iterdir())) == 3
    assert first.convert_ids_to_tokens([0, 1, 2]) == ["<|pad|>", "<|bos|>", "<|eos|>"]


def number_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.py").write_text(f"x{i} = [12345, 3.14, 2024, 99, 1000000]\n" * 40)
    return folder


def test_digit_losses_are_refused_with_a_bpe_that_merges_digits(tmp_path, capsys):
    corpus = number_corpus(tmp_path)
    config = {"source": "text_files", "paths": [f"{corpus}/*.py"], "n_test": 1, "max_length": 16}
    train, _ = text_files.split_documents(
        text_files.read_documents(DataConfig.model_validate(config)),
        DataConfig.model_validate(config),
        0,
    )
    tokenizer = build_text_tokenizer(300, tmp_path / "tok", train)
    assert check_tokenizer_for_loss(tokenizer, "mle") is None  # CE needs no digit tokens
    with pytest.raises(ValueError, match="loss 'ntl_was' needs single-digit tokens"):
        check_tokenizer_for_loss(tokenizer, "ntl_was")
    sweep = {
        "experiment": "text",
        "mode": "grid",
        "trial": {
            "cache_dir": str(tmp_path / "cache"),
            "model": {"preset": "tiny", "vocab_size": 300},
            "data": config,
        },
        "grid": {"losses": ["mle", "ntl_was"]},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    results = tmp_path / "results"
    assert main(["sweep", str(path), "--results", str(results), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "loss 'ntl_was' needs single-digit tokens" in err and not results.exists()
    sweep["grid"]["losses"] = ["mle"]
    path.write_text(yaml.safe_dump(sweep))
    assert main(["sweep", str(path), "--results", str(results), "--dry-run"]) == 0
    assert "text_files (6 files" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"paths": []}, "data.source 'text_files' needs data.paths"),
        ({"n_extra": 8}, r"data\.n_extra: arithmetic problems"),
        ({"benchmarks": {"gsm8k": "x.jsonl"}}, r"data\.benchmarks: arithmetic problems"),
        ({"source": "mathgen"}, "data.paths and data.exclude are for data.source 'text_files'"),
    ],
)
def test_bad_text_configs_name_the_key(given, message):
    with pytest.raises(ValueError, match=message):
        data(**given)


def test_text_sweeps_report_no_digit_or_generation_metrics():
    trial = TrialConfig(data=EMAIL, eval={"generate_examples": 8})
    assert evaluation_names(trial) == (["test"], [])
    sweep = SweepConfig(mode="grid", trial=trial, grid={"losses": ["mle"]})
    check_metric(sweep.trial, sweep.losses, "k", "eval/test/error_entropy", digits=False)
    with pytest.raises(ValueError, match="'text_files' has no generation evaluation"):
        check_metric(sweep.trial, sweep.losses, "k", "gen/macc", digits=False)
    with pytest.raises(ValueError, match="no single-digit tokens"):
        check_metric(sweep.trial, sweep.losses, "k", "eval/test/digit_acc", digits=False)


def test_the_manifest_lists_the_corpus_files_with_their_sha256():
    sweep = SweepConfig(mode="grid", trial={"data": EMAIL}, grid={"losses": ["mle"]})
    corpus = manifest(sweep)["corpus"]
    files = {f["path"]: f for f in corpus["files"]}
    expected = text_files.corpus_files(sweep.trial.data)
    assert list(files) == [str(p) for p in expected] and corpus["n_files"] == len(expected)
    for path in expected:
        assert files[str(path)]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert corpus["stdlib"] == str(STDLIB) and corpus["paths"] == EMAIL["paths"]
    assert "corpus" not in manifest(SweepConfig(mode="grid", grid={"losses": ["mle"]}))


def test_first_scored_tokens_cuts_at_exactly_n():
    # prompt-masked examples: position 0 is never a target, -100 labels are not either
    examples = [
        {"input_ids": [1, 5, 6, 7, 8], "labels": [-100, -100, 6, 7, 8]},  # 3 scored
        {"input_ids": [1, 9, 9, 9], "labels": [1, 9, 9, 9]},  # 3 scored (not position 0)
        {"input_ids": [1, 4], "labels": [1, 4]},
    ]
    kept = first_scored_tokens(examples, 5, "test")
    assert kept == [examples[0], {"input_ids": [1, 9, 9, 9], "labels": [1, 9, 9, -100]}]
    assert first_scored_tokens(examples, 3, "test") == examples[:1]
    assert len(first_scored_tokens(examples, 7, "test")) == 3
    with pytest.raises(ValueError, match=r"eval\.scored_tokens=8: split 'test' scores only 7"):
        first_scored_tokens(examples, 8, "test")


def test_held_out_ce_at_a_fixed_number_of_scored_tokens(tmp_path, email_tokenizer):
    config = TrialConfig(
        cache_dir=str(tmp_path),
        model={"preset": "tiny", "vocab_size": 400},
        data={**EMAIL, "max_length": 64},
        eval={"scored_tokens": 1000},
    )
    splits = load_splits(config, email_tokenizer)
    assert all(e["labels"] == e["input_ids"] for e in splits.train)
    held_out = splits.eval_examples["test"]
    scored = sum(sum(1 for t in e["labels"][1:] if t != IGNORE_INDEX) for e in held_out)
    assert scored == 1000 and len(held_out) == math.ceil(1000 / 63)
    model = build_model(
        "tiny", len(email_tokenizer), 0, pad_token_id=0, bos_token_id=1, eos_token_id=2
    )
    metrics = teacher_forced(
        model,
        held_out,
        vocab=None,
        pad_id=0,
        batch_size=8,
        device=torch.device("cpu"),
        rank=0,
        world_size=1,
    )
    assert metrics["scored_tokens"] == 1000.0
    assert not any(k.startswith("digit") for k in metrics)
    # CE = EE + SA − log C (the decomposition's identity), and an untrained model is near log V
    parts = metrics["error_entropy"] + metrics["self_alignment"] - metrics["log_confidence"]
    assert metrics["ce"] == pytest.approx(parts, rel=1e-9)
    assert abs(metrics["ce"] - math.log(len(email_tokenizer))) < 1.0
    # the same held-out sequences, model and count: the same number
    again = teacher_forced(
        model,
        load_splits(config, email_tokenizer).eval_examples["test"],
        vocab=None,
        pad_id=0,
        batch_size=3,
        device=torch.device("cpu"),
        rank=0,
        world_size=1,
    )
    assert again["ce"] == pytest.approx(metrics["ce"], rel=1e-12)


@pytest.fixture(scope="module")
def ray_local():
    import ray

    import orchestrator  # noqa: F401  (Ray on the loopback interface)
    from orchestrator.run.local_ray import connect

    connect(num_cpus=2)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_a_deepspeed_trial_learns_the_stdlib_corpus(tmp_path, ray_local):
    from tests.trainables.worker.test_training import run

    config = {
        "model": {"preset": "tiny", "vocab_size": 400},
        "data": {**EMAIL, "max_length": 64},
        "train": {"steps": 40, "micro_batch_size": 16, "lr": 3e-3, "warmup_steps": 4},
        "eval": {"every": 20, "batch_size": 16, "scored_tokens": 2048},
    }
    reports = run(tmp_path, str(tmp_path / "cache"), "text", workers=1, config=config)
    evals = [r for r in reports if "eval/test/ce" in r]
    assert [r["step"] for r in evals] == [0, 20, 40]
    assert all(r["eval/test/scored_tokens"] == 2048 for r in evals)
    ce = [r["eval/test/ce"] for r in evals]
    # from about log(400) = 6.0 nats untrained, held-out CE falls at each evaluation, by a
    # clear margin over 40 steps (seen here: 5.98, 5.03, 4.99)
    assert ce[0] > ce[1] > ce[2] and ce[0] - ce[2] > 0.5, ce
    final = reports[-1]
    # no generation; digit metrics only where this small BPE kept single digits (it does here)
    assert not any(k.startswith("gen/") for k in final)
    assert final["eval/test/error_entropy"] < evals[0]["eval/test/error_entropy"]
    # the worker trained the corpus's BPE (of the stated size), not the digit tokenizer
    built = [p.name for p in (tmp_path / "cache" / "tokenizers").iterdir()]
    assert len(built) == 1 and built[0].startswith("text-bpe-400-"), built
