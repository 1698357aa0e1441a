"""The from-scratch models' tokenizer for a text/code corpus (`data.source: text_files`): plain
byte-level BPE (GPT-2 style pre-tokenisation, so numbers may merge: no single-digit guarantee)
with `vocab_size` tokens, trained locally on the training documents and cached on disk.

Special tokens as for the digit tokenizer (`trainables.models.tokenizer`): `<|pad|>` (0),
`<|bos|>` (1, before every encoded text) and `<|eos|>` (2).

Cache: `cache_dir/text-bpe-<vocab_size>-<key>/tokenizer.json`, where `key` hashes the vocabulary
size, the sha256 of every training document (in order), the trainer settings and the version of
`tokenizers`: the same files give the same tokenizer, from the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from trainables.data.text_files import Document
from trainables.models.tokenizer import (
    BOS_TOKEN,
    MIN_PAIR_FREQUENCY,
    MIN_VOCAB_SIZE,
    SPECIAL_TOKENS,
    TOKENIZER_FILE,
    load_tokenizer_file,
    save_atomically,
)

# Bump when the way the tokenizer is built changes, so old cache entries are not reused.
_BUILD_VERSION = 1


def build_text_tokenizer(
    vocab_size: int, cache_dir: Path, documents: Sequence[Document]
) -> PreTrainedTokenizerFast:
    """The byte-level BPE tokenizer of `vocab_size` tokens trained on `documents`, from the cache
    under `cache_dir` or trained (deterministically) and cached."""
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"model.vocab_size={vocab_size} is below {MIN_VOCAB_SIZE} (256 byte tokens + "
            f"{len(SPECIAL_TOKENS)} special tokens)"
        )
    if not documents:
        raise ValueError("a text tokenizer needs at least one training document")
    spec = {
        "build_version": _BUILD_VERSION,
        "vocab_size": vocab_size,
        "special_tokens": list(SPECIAL_TOKENS),
        "min_frequency": MIN_PAIR_FREQUENCY,
        "pre_tokenizer": "ByteLevel(add_prefix_space=False)",
        "documents": hashlib.sha256("\n".join(d.sha256 for d in documents).encode()).hexdigest(),
        "n_documents": len(documents),
        "tokenizers": tokenizers.__version__,
    }
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    final = Path(cache_dir) / f"text-bpe-{vocab_size}-{key}"
    if not (final / TOKENIZER_FILE).is_file():
        save_atomically(final, _train(vocab_size, documents), spec)
    return load_tokenizer_file(final / TOKENIZER_FILE)


def _train(vocab_size: int, documents: Sequence[Document]) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
        special_tokens=[(BOS_TOKEN, SPECIAL_TOKENS.index(BOS_TOKEN))],
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_PAIR_FREQUENCY,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator((d.text for d in documents), trainer=trainer)
    return tokenizer
