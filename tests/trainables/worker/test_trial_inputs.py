"""What a trial trains and evaluates on (`trainables.worker.trial_inputs`), from its config
alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainables.config import TrialConfig
from trainables.worker.trial_inputs import (
    check_tokenizer_for_loss,
    held_out_split,
    load_splits,
    load_tokenizer,
)

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"


def instruction_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "instructions.jsonl"
    rows = [
        {"instruction": f"What is {i} plus {i}?", "input": "", "output": f"{i} + {i} = {2 * i}"}
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_instruction_file_holds_out_its_last_records(tmp_path):
    path = instruction_file(tmp_path, 30)
    config = TrialConfig.model_validate(
        {"data": {"source": "instructions", "path": str(path), "n_train": 20, "n_test": 5}}
    )
    train, test = held_out_split(config.data, seed=0)
    assert [r.prompt for r in test] == [f"What is {i} plus {i}?" for i in range(25, 30)]
    assert len(train) == 20 and {r.prompt for r in train}.isdisjoint({r.prompt for r in test})
    assert test[0].answer_value == 50.0
    too_few = config.data.model_copy(update={"n_test": 30})
    with pytest.raises(ValueError, match=r"30 records, not more than data.n_test=30"):
        held_out_split(too_few, seed=0)


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs the real benchmark files in ../shared/data")
def test_splits_for_a_generated_sweep_with_a_benchmark(tmp_path):
    config = TrialConfig.model_validate(
        {
            "cache_dir": str(tmp_path),
            "data": {
                "modules": ["arithmetic__add_or_sub"],
                "n_train": 40,
                "n_test": 12,
                "n_extra": 6,
                "max_length": 64,
                "benchmarks": {"gsm8k": str(SHARED / "gsm8k" / "test.jsonl")},
                "benchmark_limit": 5,
            },
            "eval": {"generate_examples": 3},
        }
    )
    tokenizer = load_tokenizer(config.model, config.cache_dir)
    splits = load_splits(config, tokenizer)
    assert len(splits.train) == 40
    assert sorted(splits.eval_examples) == ["extra", "test"]
    assert [len(v) for v in splits.generation.values()] == [3, 3, 3]
    assert list(splits.generation) == ["mathgen", "mathgen_extra", "gsm8k"]
    example = splits.train[0]
    # The prompt is not trained on: its labels are -100, the answer's are its ids.
    n_prompt = sum(1 for label in example["labels"] if label == -100)
    assert 0 < n_prompt < len(example["labels"])
    assert example["labels"][n_prompt:] == example["input_ids"][n_prompt:]


def test_tokenizer_check_per_loss():
    from tests.trained_tokenizers import byte_level_bpe

    merged = byte_level_bpe(split_digits=False)
    assert check_tokenizer_for_loss(merged, "mle") is None  # CE needs no digit tokens
    with pytest.raises(ValueError, match="loss 'ntl_was' needs single-digit tokens"):
        check_tokenizer_for_loss(merged, "ntl_was")
    assert check_tokenizer_for_loss(byte_level_bpe(split_digits=True), "del") is not None
