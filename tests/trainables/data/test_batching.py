"""Tests for trainables.data.batching: records -> token ids -> padded tensors."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from tests.trained_tokenizers import byte_level_bpe
from trainables.data import mathgen
from trainables.data.batching import (
    IGNORE_INDEX,
    collate,
    encode_prompts,
    encode_records,
    format_prompt,
    prompt_token_ids,
)
from trainables.data.records import Record
from trainables.models.presets import build_model
from trainables.models.tokenizer import build_digit_tokenizer

VOCAB_SIZE = 512


@pytest.fixture(scope="module")
def tokenizer(pytestconfig: pytest.Config):
    # The pytest cache survives between runs; the tokenizer cache is keyed, so reuse is safe.
    return build_digit_tokenizer(VOCAB_SIZE, pytestconfig.cache.mkdir("numsweep-tokenizers"))


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _record(prompt: str, answer: str, target: str | None = None) -> Record:
    return Record(prompt=prompt, answer=answer, answer_value=None, source="test", target=target)


def test_format_prompt() -> None:
    assert format_prompt("What is 2 + 2?") == "What is 2 + 2?\nAnswer: "


def test_encode_records_layout_and_labels(tokenizer) -> None:
    record = _record("What is 12 + 30?", "-42.5")
    [example] = encode_records(tokenizer, [record], max_length=64)
    prompt = [tokenizer.bos_token_id, *_ids(tokenizer, "What is 12 + 30?\nAnswer: ")]
    # Each character of the answer is its own token with the digit tokenizer.
    answer = tokenizer.convert_tokens_to_ids(["-", "4", "2", ".", "5"])
    assert example["input_ids"] == prompt + answer + [tokenizer.eos_token_id]
    assert example["labels"] == [IGNORE_INDEX] * len(prompt) + answer + [tokenizer.eos_token_id]
    assert tokenizer.decode(example["input_ids"]) == (
        "<|bos|>What is 12 + 30?\nAnswer: -42.5<|eos|>"
    )


def test_target_is_trained_when_present(tokenizer) -> None:
    record = _record("Q", "7", target="3 + 4 = 7")
    [example] = encode_records(tokenizer, [record], max_length=64)
    trained = [t for t in example["labels"] if t != IGNORE_INDEX]
    assert tokenizer.decode(trained) == "3 + 4 = 7<|eos|>"


def test_right_truncation_keeps_the_start_of_the_answer(tokenizer) -> None:
    record = _record("What is 1 + 12344?", "12345")
    prompt_length = len(prompt_token_ids(tokenizer, record))
    [example] = encode_records(tokenizer, [record], max_length=prompt_length + 2)
    assert len(example["input_ids"]) == len(example["labels"]) == prompt_length + 2
    assert example["labels"][prompt_length:] == tokenizer.convert_tokens_to_ids(["1", "2"])


def test_records_whose_prompt_fills_max_length_are_skipped_and_counted(tokenizer) -> None:
    short = _record("2+2", "4")
    long = _record("What is the value of " + "1 + " * 30 + "1?", "31")
    limit = len(prompt_token_ids(tokenizer, long))  # the prompt fits, its answer does not
    with pytest.warns(UserWarning, match=r"skipped 2 of 3 records .* \(first: record 1\)"):
        examples = encode_records(tokenizer, [short, long, long], max_length=limit)
    assert len(examples) == 1
    assert examples[0] == encode_records(tokenizer, [short], max_length=limit)[0]
    with pytest.raises(ValueError, match=r"record 1 \(test\): prompt is \d+ tokens"):
        encode_records(tokenizer, [short, long], max_length=limit, on_overflow="raise")
    # One token more and the long record keeps the first answer token.
    [_, kept] = encode_records(tokenizer, [short, long], max_length=limit + 1)
    assert [t for t in kept["labels"] if t != IGNORE_INDEX] == _ids(tokenizer, "3")


@pytest.mark.parametrize("which", ["digit", "gpt2-style"])
def test_records_encoded_together_equal_each_encoded_alone(tokenizer, which) -> None:
    """`encode_records` tokenises all prompts and all completions in one call each; the ids must
    be those of one call per text, built here by hand (bos for the digit tokenizer, none for the
    GPT-2-style one, which adds no special tokens), for records of many lengths."""
    tok = tokenizer
    if which == "gpt2-style":
        tok = copy.deepcopy(byte_level_bpe(split_digits=False))  # shared: other tests set tokens
        tok.eos_token = tok.pad_token = "<|endoftext|>"
    modules = ["arithmetic__add_or_sub", "numbers__place_value", "numbers__round_number"]
    records = mathgen.generate(modules, 60, "train", 3)
    records.append(_record("  spaces\tand\nlines  ", " 7 "))
    prefix = [tok.bos_token_id] if which == "digit" else []
    examples = encode_records(tok, records, max_length=512)
    assert len(examples) == len(records)
    assert len({len(e["input_ids"]) for e in examples}) > 5  # lengths differ: nothing padded
    for record, example in zip(records, examples, strict=True):
        prompt = prefix + _ids(tok, format_prompt(record.prompt))
        completion = [*_ids(tok, record.completion), tok.eos_token_id]
        assert example["input_ids"] == prompt + completion
        assert example["labels"] == [IGNORE_INDEX] * len(prompt) + completion
    prompts = encode_prompts(tok, records, max_length=512)
    assert [len(prompt_token_ids(tok, r)) for r in records] == prompts["attention_mask"].sum(
        1
    ).tolist()


def test_chat_template_masks_the_whole_templated_prompt(tokenizer) -> None:
    chat = copy.deepcopy(tokenizer)
    chat.chat_template = (
        "{% for m in messages %}<|bos|>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|bos|>assistant: {% endif %}"
    )
    record = _record("What is 6 * 7?", "42")
    [example] = encode_records(chat, [record], max_length=64, chat_template=True)
    templated = chat.apply_chat_template(
        [{"role": "user", "content": record.prompt}], add_generation_prompt=True, tokenize=False
    )
    assert templated == "<|bos|>user: What is 6 * 7?\n<|bos|>assistant: "
    prompt = _ids(chat, templated)
    assert example["input_ids"][: len(prompt)] == prompt
    assert example["labels"] == [IGNORE_INDEX] * len(prompt) + _ids(chat, "42") + [
        chat.eos_token_id
    ]
    with pytest.raises(ValueError, match="no chat template"):
        encode_records(tokenizer, [record], max_length=64, chat_template=True)


def test_collate_pads_right(tokenizer) -> None:
    examples = [
        {"input_ids": [5, 6, 7], "labels": [IGNORE_INDEX, 6, 7]},
        {"input_ids": [8], "labels": [8]},
    ]
    batch = collate(examples, pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[IGNORE_INDEX, 6, 7], [8, IGNORE_INDEX, IGNORE_INDEX]]
    assert all(t.dtype == torch.long for t in batch.values())


@pytest.mark.parametrize(
    ("examples", "pad_id", "error", "match"),
    [
        ([], 0, ValueError, "no examples"),
        ([{"input_ids": [1, 2], "labels": [1]}], 0, ValueError, "example 0"),
        ([{"input_ids": [], "labels": []}], 0, ValueError, "empty"),
        ([{"input_ids": [1], "labels": [1]}], None, TypeError, "pad_id"),
    ],
)
def test_collate_rejects_bad_input(examples, pad_id, error, match) -> None:
    with pytest.raises(error, match=match):
        collate(examples, pad_id=pad_id)


def test_model_loss_covers_exactly_the_answer_tokens(tokenizer) -> None:
    # The HF loss on a collated batch must equal cross-entropy over the answer+eos positions only,
    # computed by hand: logits at position t predict the token at t + 1.
    records = mathgen.generate(["arithmetic__add_or_sub", "numbers__gcd"], 4, "train", 0)
    batch = collate(encode_records(tokenizer, records, max_length=64), tokenizer.pad_token_id)
    model = build_model(
        "tiny",
        len(tokenizer),
        0,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    output = model(**batch)
    logits = output.logits[:, :-1]  # (B, T-1, V)
    targets = batch["labels"][:, 1:]  # (B, T-1)
    trained = targets != IGNORE_INDEX
    by_hand = F.cross_entropy(logits[trained], targets[trained])
    torch.testing.assert_close(output.loss, by_hand)
    answer_tokens = sum(len(_ids(tokenizer, r.answer)) + 1 for r in records)
    assert int(trained.sum()) == answer_tokens


def test_right_padding_does_not_change_the_real_positions(tokenizer) -> None:
    records = [
        _record("What is 2 + 2?", "4"),
        _record("What is the remainder when 1729 is divided by 185?", "64"),
    ]
    examples = encode_records(tokenizer, records, max_length=64)
    model = build_model("tiny", len(tokenizer), 1, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    with torch.no_grad():
        batched = model(**{k: v for k, v in collate(examples, 0).items() if k != "labels"}).logits
        alone = model(torch.tensor([examples[0]["input_ids"]])).logits
    length = len(examples[0]["input_ids"])
    torch.testing.assert_close(batched[0, :length], alone[0], atol=1e-5, rtol=1e-5)


def test_encode_prompts_pads_left_for_generation(tokenizer) -> None:
    records = [_record("What is 2 + 2?", "4"), _record("Round 3.14159 to two places.", "3.14")]
    batch = encode_prompts(tokenizer, records, max_length=64)
    first = prompt_token_ids(tokenizer, records[0])
    second = prompt_token_ids(tokenizer, records[1])
    width = max(len(first), len(second))
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, width)
    rows = [first, second]
    for row, ids in enumerate(rows):
        pad = width - len(ids)
        assert batch["input_ids"][row].tolist() == [tokenizer.pad_token_id] * pad + ids
        assert batch["attention_mask"][row].tolist() == [0] * pad + [1] * len(ids)
    # The prompts end with the same "Answer: " cue the training examples have.
    [example] = encode_records(tokenizer, records[:1], max_length=64)
    assert example["input_ids"][: len(first)] == first

    # Left padding is transparent to generation: the first generated scores of the padded row
    # equal those of the prompt generated alone.
    model = build_model("tiny", len(tokenizer), 2, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    settings = {"max_new_tokens": 1, "do_sample": False, "output_scores": True}
    settings["return_dict_in_generate"] = True
    with torch.no_grad():
        together = model.generate(**batch, **settings).scores[0]  # (B, V)
        shorter = min(range(2), key=lambda r: len(rows[r]))
        alone = model.generate(
            input_ids=torch.tensor([rows[shorter]]),
            attention_mask=torch.ones(1, len(rows[shorter]), dtype=torch.long),
            **settings,
        ).scores[0]
    torch.testing.assert_close(together[shorter], alone[0], atol=1e-4, rtol=1e-4)


def test_encode_prompts_rejects_prompts_longer_than_max_length(tokenizer) -> None:
    record = _record("What is the value of " + "1 + " * 30 + "1?", "31")
    with pytest.raises(ValueError, match=r"record 0 \(test\): prompt is \d+ tokens"):
        encode_prompts(tokenizer, [record], max_length=10)
    with pytest.raises(ValueError, match="no records"):
        encode_prompts(tokenizer, [], max_length=10)


@pytest.mark.parametrize("max_length", [0, 1, 2.5, True])
def test_bad_max_length(tokenizer, max_length) -> None:
    with pytest.raises(ValueError, match="max_length"):
        encode_records(tokenizer, [_record("Q", "1")], max_length=max_length)
