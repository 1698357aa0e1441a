"""Records -> token ids -> padded tensors, for training (prompt masked out of the loss) and for
generation (left-padded prompts).

The prompt and the completion are tokenised separately and concatenated, so the boundary between
them is exact (no token straddles it) and every completion digit is tokenised the same way wherever
it appears; labels follow the Hugging Face causal-LM convention (aligned with ``input_ids``, -100 on
positions that carry no loss; the model shifts them by one itself).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import torch

from trainables.data.records import Record

IGNORE_INDEX = -100
"""The label value Hugging Face / PyTorch cross-entropy ignores."""

ANSWER_CUE = "\nAnswer: "


def format_prompt(prompt: str) -> str:
    """The text a (non-chat) model sees before its answer."""
    return f"{prompt}{ANSWER_CUE}"


def encode_records(
    tokenizer: Any,
    records: Sequence[Record],
    max_length: int,
    chat_template: bool = False,
    *,
    on_overflow: Literal["skip", "raise"] = "skip",
) -> list[dict[str, list[int]]]:
    """Training examples: ``input_ids`` = prompt + completion + [eos], ``labels`` = -100 on the
    prompt, the completion and eos ids after it.

    Too long: the example is cut to ``max_length`` from the right (the end of the completion, its
    eos first, goes). A record whose prompt alone takes ``max_length`` tokens or more would keep no
    completion token at all: it is skipped (``on_overflow="skip"``, one warning with the count and
    the first index) or raises ValueError (``on_overflow="raise"``), so the result can be shorter
    than ``records``.

    ``chat_template=True`` (instruct models): the prompt is the tokenizer's chat template applied to
    one user message (the bare ``record.prompt``) with the assistant generation header; the
    completion follows as above, so only the assistant's answer and its end token carry loss.
    """
    _check_max_length(max_length)
    if on_overflow not in ("skip", "raise"):
        raise ValueError(f"on_overflow must be 'skip' or 'raise', got {on_overflow!r}")
    eos_id = _required_token_id(tokenizer, "eos_token_id")
    examples: list[dict[str, list[int]]] = []
    skipped: list[int] = []
    prompts = prompts_token_ids(tokenizer, records, chat_template=chat_template)
    completions = _plain_ids(tokenizer, [record.completion for record in records])
    for index, (record, prompt_ids) in enumerate(zip(records, prompts, strict=True)):
        if len(prompt_ids) >= max_length:
            if on_overflow == "raise":
                raise ValueError(
                    f"record {index} ({record.source or 'no source'}): prompt is "
                    f"{len(prompt_ids)} tokens, max_length={max_length} leaves no room for the "
                    "answer"
                )
            skipped.append(index)
            continue
        completion_ids = [*completions[index], eos_id]
        input_ids = (prompt_ids + completion_ids)[:max_length]
        labels = ([IGNORE_INDEX] * len(prompt_ids) + completion_ids)[:max_length]
        examples.append({"input_ids": input_ids, "labels": labels})
    if skipped:
        warnings.warn(
            f"encode_records skipped {len(skipped)} of {len(records)} records whose prompt alone "
            f"is >= max_length={max_length} tokens (first: record {skipped[0]})",
            stacklevel=2,
        )
    return examples


def prompt_token_ids(tokenizer: Any, record: Record, *, chat_template: bool = False) -> list[int]:
    """The token ids a model is given before its answer (as in `encode_records`)."""
    return prompts_token_ids(tokenizer, [record], chat_template=chat_template)[0]


def prompts_token_ids(
    tokenizer: Any, records: Sequence[Record], *, chat_template: bool = False
) -> list[list[int]]:
    """`prompt_token_ids` of each record, the plain prompts tokenised in one call (a trial's
    few thousand records one call each took most of its data loading)."""
    if chat_template:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                f"chat_template=True but tokenizer {type(tokenizer).__name__} "
                f"({getattr(tokenizer, 'name_or_path', '?')!r}) has no chat template"
            )
        return [
            list(
                tokenizer.apply_chat_template(
                    [{"role": "user", "content": record.prompt}],
                    add_generation_prompt=True,
                    tokenize=True,
                    return_dict=True,
                )["input_ids"]
            )
            for record in records
        ]
    prefix = _special_prefix(tokenizer)
    texts = [format_prompt(record.prompt) for record in records]
    return [prefix + ids for ids in _plain_ids(tokenizer, texts)]


def collate(examples: Sequence[dict[str, Sequence[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad examples from `encode_records` into a batch: ``input_ids`` (B, T) padded with
    ``pad_id``, ``attention_mask`` (B, T) 1 on real tokens, ``labels`` (B, T) padded with -100."""
    if not examples:
        raise ValueError("collate got no examples")
    if isinstance(pad_id, bool) or not isinstance(pad_id, int):
        raise TypeError(f"pad_id must be an int token id, got {pad_id!r}")
    for index, example in enumerate(examples):
        if len(example["input_ids"]) != len(example["labels"]):
            raise ValueError(
                f"example {index}: input_ids has {len(example['input_ids'])} ids but labels has "
                f"{len(example['labels'])}"
            )
        if not example["input_ids"]:
            raise ValueError(f"example {index} is empty")
    width = max(len(example["input_ids"]) for example in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)  # (B, T)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)  # (B, T)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)  # (B, T)
    for row, example in enumerate(examples):
        length = len(example["input_ids"])
        input_ids[row, :length] = torch.as_tensor(example["input_ids"], dtype=torch.long)
        attention_mask[row, :length] = 1
        labels[row, :length] = torch.as_tensor(example["labels"], dtype=torch.long)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def encode_prompts(
    tokenizer: Any, records: Sequence[Record], max_length: int, *, chat_template: bool = False
) -> dict[str, torch.Tensor]:
    """Prompts for generation, left-padded (so every row's next token is at the last column):
    ``input_ids`` (B, T) padded with the tokenizer's pad id, ``attention_mask`` (B, T). A prompt
    longer than ``max_length`` raises ValueError (a cut question would be a different question,
    and skipping would misalign answers with records)."""
    _check_max_length(max_length)
    if not records:
        raise ValueError("encode_prompts got no records")
    pad_id = _required_token_id(tokenizer, "pad_token_id")
    prompts = prompts_token_ids(tokenizer, records, chat_template=chat_template)
    for index, ids in enumerate(prompts):
        if len(ids) > max_length:
            raise ValueError(
                f"record {index} ({records[index].source or 'no source'}): prompt is {len(ids)} "
                f"tokens, longer than max_length={max_length}"
            )
    width = max(len(ids) for ids in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)  # (B, T)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, T)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.as_tensor(ids, dtype=torch.long)
        attention_mask[row, width - len(ids) :] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def _plain_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """Each text's ids without special tokens, in one tokenizer call (the same ids as one call
    per text: a call without padding or truncation encodes each text on its own)."""
    if not texts:
        return []
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def _special_prefix(tokenizer: Any) -> list[int]:
    """The special tokens the tokenizer itself puts before a text (e.g. BOS for Llama-style
    tokenizers, nothing for GPT-2-style ones); anything it appends (an eos) is not wanted before
    the answer and is dropped."""
    probe = "0"
    with_specials = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    [plain] = _plain_ids(tokenizer, [probe])
    for start in range(len(with_specials) - len(plain) + 1):
        if with_specials[start : start + len(plain)] == plain:
            return with_specials[:start]
    raise ValueError(
        f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r}: cannot locate the text among the "
        "special tokens it adds"
    )


def _required_token_id(tokenizer: Any, attribute: str) -> int:
    token_id = getattr(tokenizer, attribute, None)
    if token_id is None:
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} has no {attribute}; set it "
            "before encoding"
        )
    return int(token_id)


def _check_max_length(max_length: int) -> None:
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an int >= 2, got {max_length!r}")
