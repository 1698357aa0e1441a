"""The from-scratch models' tokenizer: byte-level BPE that never merges digits, trained locally on
generated mathematics problems and cached on disk.

Pre-tokenisation splits every digit into its own piece before the byte-level step, so no learned
merge can contain a digit: "12345" is always 5 tokens and "3.14" is 4 ('3', '.', '1', '4'); the
byte-level alphabet (all 256 bytes) makes every input encodable, so no unknown token is needed.
Special tokens: ``<|pad|>`` (id 0), ``<|bos|>`` (1, put before every encoded text) and
``<|eos|>`` (2).

The vocabulary holds at most ``vocab_size`` tokens; a corpus this narrow may run out of pairs
worth merging first (pairs must occur at least twice), so check ``len(tokenizer)``.

Cache: ``cache_dir/digit-bpe-<vocab_size>-<key>/tokenizer.json``, where ``key`` hashes everything
the result depends on (vocab size, corpus spec and seed, special tokens, trainer settings, the
versions of ``tokenizers`` and ``mathematics_dataset``). A build writes into a temporary directory
and renames it into place, so concurrent builders (Ray workers) never see a half-written
tokenizer: the first rename wins, the others discard their (identical) copy.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import string
import tempfile
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from trainables.data import mathgen
from trainables.data.batching import format_prompt

PAD_TOKEN = "<|pad|>"
BOS_TOKEN = "<|bos|>"
EOS_TOKEN = "<|eos|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN)

CORPUS_PROBLEMS = 3000
"""Training-split problems (all of `mathgen.MODULES`, evenly) the BPE merges are learned from."""
MIN_PAIR_FREQUENCY = 2
_BYTE_ALPHABET_SIZE = 256
MIN_VOCAB_SIZE = _BYTE_ALPHABET_SIZE + len(SPECIAL_TOKENS)
# Bump when the way the tokenizer is built changes, so old cache entries are not reused.
_BUILD_VERSION = 1
TOKENIZER_FILE = "tokenizer.json"


def build_digit_tokenizer(
    vocab_size: int, cache_dir: Path, seed: int = 0
) -> PreTrainedTokenizerFast:
    """The digit-splitting byte-level BPE tokenizer for ``vocab_size``, from the cache under
    ``cache_dir`` or trained (deterministically: same files every time) and cached."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {vocab_size!r}")
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size={vocab_size} is below {MIN_VOCAB_SIZE} (256 byte tokens + "
            f"{len(SPECIAL_TOKENS)} special tokens)"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    cache_dir = Path(cache_dir)
    spec = _build_spec(vocab_size, seed)
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    final = cache_dir / f"digit-bpe-{vocab_size}-{key}"
    if not (final / TOKENIZER_FILE).is_file():
        _build_into(final, spec)
    return load_tokenizer_file(final / TOKENIZER_FILE)


def _build_spec(vocab_size: int, seed: int) -> dict[str, object]:
    return {
        "build_version": _BUILD_VERSION,
        "vocab_size": vocab_size,
        "special_tokens": list(SPECIAL_TOKENS),
        "min_frequency": MIN_PAIR_FREQUENCY,
        "pre_tokenizer": "Digits(individual_digits=True) + ByteLevel(add_prefix_space=False)",
        "corpus": {
            "generator": "mathgen",
            "modules": list(mathgen.MODULES),
            "split": "train",
            "problems": CORPUS_PROBLEMS,
            "seed": seed,
            "template": format_prompt("{prompt}") + "{completion}",
            "ascii": string.printable,
        },
        "tokenizers": tokenizers.__version__,
        "mathematics_dataset": importlib.metadata.version("mathematics_dataset"),
    }


@functools.lru_cache(maxsize=2)
def _corpus(seed: int) -> tuple[str, ...]:
    # Cached: building several vocabulary sizes in one process generates the problems once.
    records = mathgen.generate(mathgen.MODULES, CORPUS_PROBLEMS, "train", seed)
    texts = [format_prompt(record.prompt) + record.completion for record in records]
    # Every printable ASCII character once, so each is seen in context even where the problems
    # never use it (the byte alphabet already guarantees it is encodable).
    texts.append(string.printable)
    return tuple(texts)


def _train(spec: dict[str, object]) -> Tokenizer:
    corpus_spec = spec["corpus"]
    assert isinstance(corpus_spec, dict)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{BOS_TOKEN} $A",
        pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
        special_tokens=[(BOS_TOKEN, SPECIAL_TOKENS.index(BOS_TOKEN))],
    )
    trainer = trainers.BpeTrainer(
        vocab_size=spec["vocab_size"],
        min_frequency=MIN_PAIR_FREQUENCY,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(corpus_spec["seed"]), trainer=trainer)
    return tokenizer


def _build_into(final: Path, spec: dict[str, object]) -> None:
    save_atomically(final, _train(spec), spec)


def save_atomically(final: Path, tokenizer: Tokenizer, spec: dict[str, object]) -> None:
    """Write `tokenizer` (and the `spec` it was built from) as the folder `final`: into a
    temporary folder renamed into place, so concurrent builders (Ray workers) never see a
    half-written tokenizer; the first rename wins, the others discard their (identical) copy."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        tokenizer.save(str(staging / TOKENIZER_FILE))
        (staging / "spec.json").write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
        try:
            os.rename(staging, final)
        except OSError:
            # Another process renamed its build into place first; use that one.
            if not (final / TOKENIZER_FILE).is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def load_tokenizer_file(path: Path) -> PreTrainedTokenizerFast:
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(path),
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
    )
    tokenizer.name_or_path = str(path.parent)
    return tokenizer
