"""Tokenizers trained here with the `tokenizers` library (no hub access), for the tests of digit
losses and of the checks that refuse a tokenizer: a byte-level BPE whose pre-tokenizer splits
digits one by one (the setting digit losses need), and a GPT-2-style byte-level BPE without that
splitter, which learns multi-digit tokens."""

from __future__ import annotations

import random
from functools import cache

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast


def number_corpus(n_lines: int = 2000, seed: int = 0) -> list[str]:
    """Text full of integers and decimals, so that BPE has many digit pairs to merge."""
    rng = random.Random(seed)
    return [
        f"The total was {rng.randint(0, 99999)}.{rng.randint(0, 99)} and then "
        f"{rng.randint(0, 1000)} items cost {rng.random() * 100:.3f} each."
        for _ in range(n_lines)
    ]


@cache
def byte_level_bpe(split_digits: bool, vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on `number_corpus`, with or without the digit splitter."""
    tokenizer = Tokenizer(models.BPE())
    steps = [pre_tokenizers.ByteLevel(add_prefix_space=False)]
    if split_digits:
        steps.insert(0, pre_tokenizers.Digits(individual_digits=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tokenizer.train_from_iterator(number_corpus(), trainer)
    name = "local/digit-bpe" if split_digits else "local/gpt2-style-bpe"
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, name_or_path=name)
