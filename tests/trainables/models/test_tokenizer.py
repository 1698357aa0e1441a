"""Tests for trainables.models.tokenizer: the digit-splitting byte-level BPE tokenizer."""

from __future__ import annotations

import json
import os
import string
import subprocess
import sys
from pathlib import Path

import pytest

from trainables.data import mathgen
from trainables.models.tokenizer import (
    BOS_TOKEN,
    EOS_TOKEN,
    MIN_VOCAB_SIZE,
    PAD_TOKEN,
    _build_into,
    build_digit_tokenizer,
)

PROJECT_ROOT = Path(__file__).resolve().parents[3]
VOCAB_SIZE = 512


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tokenizer-cache")


@pytest.fixture(scope="module")
def tokenizer(cache_dir: Path):
    return build_digit_tokenizer(VOCAB_SIZE, cache_dir)


def _pieces(tokenizer, text: str) -> list[str]:
    return tokenizer.convert_ids_to_tokens(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_every_digit_is_its_own_token(tokenizer) -> None:
    vocabulary = tokenizer.get_vocab()
    for symbol in [*string.digits, "."]:
        assert symbol in vocabulary
    assert _pieces(tokenizer, "12345") == ["1", "2", "3", "4", "5"]
    assert _pieces(tokenizer, "3.14") == ["3", ".", "1", "4"]
    # No learned merge contains a digit, so no digit string can ever be merged.
    merged = [t for t in vocabulary if len(t) > 1 and any(c in string.digits for c in t)]
    assert merged == []
    # Digits next to letters, spaces and signs stay separate too.
    assert [p for p in _pieces(tokenizer, "x7y -42.05") if p.strip("Ġ-")] == [
        "x",
        "7",
        "y",
        "4",
        "2",
        ".",
        "0",
        "5",
    ]


def test_words_from_the_corpus_are_merged(tokenizer) -> None:
    # The BPE really learned from the math problems: frequent words are single tokens.
    assert _pieces(tokenizer, "What is") == ["What", "Ġis"]
    assert len(tokenizer) <= VOCAB_SIZE


def test_special_tokens(tokenizer) -> None:
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == (
        PAD_TOKEN,
        BOS_TOKEN,
        EOS_TOKEN,
    )
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    with_bos = tokenizer("7")["input_ids"]
    assert with_bos == [tokenizer.bos_token_id, tokenizer.convert_tokens_to_ids("7")]


@pytest.mark.parametrize(
    "text", [string.printable, "Solve -5*x - 5465 = 16*x for x.\nAnswer: -23", "café ≤ 3½ 🙂"]
)
def test_decoding_round_trips_any_text(tokenizer, text: str) -> None:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text


def test_exact_vocab_size_when_the_corpus_allows_it(cache_dir: Path) -> None:
    # 300 = 256 bytes + 3 specials + 41 merges, far fewer than the corpus supports.
    assert len(build_digit_tokenizer(300, cache_dir)) == 300


def test_cached_and_keyed(cache_dir: Path, tokenizer) -> None:
    entries = sorted(p.name for p in cache_dir.iterdir())
    again = build_digit_tokenizer(VOCAB_SIZE, cache_dir)
    assert sorted(p.name for p in cache_dir.iterdir()) == entries  # loaded, not rebuilt
    assert again.get_vocab() == tokenizer.get_vocab()
    [built] = [p for p in cache_dir.iterdir() if p.name.startswith(f"digit-bpe-{VOCAB_SIZE}-")]
    spec = json.loads((built / "spec.json").read_text())
    assert spec["vocab_size"] == VOCAB_SIZE
    assert spec["corpus"]["modules"] == list(mathgen.MODULES)
    assert spec["corpus"]["seed"] == 0  # the corpus seed is part of the key
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no staging left


def test_rebuild_is_byte_identical(tmp_path: Path, cache_dir: Path) -> None:
    build_digit_tokenizer(VOCAB_SIZE, cache_dir)
    build_digit_tokenizer(VOCAB_SIZE, tmp_path / "fresh")
    [first] = [p for p in cache_dir.iterdir() if p.name.startswith(f"digit-bpe-{VOCAB_SIZE}-")]
    [second] = list((tmp_path / "fresh").iterdir())
    assert first.name == second.name
    for name in ("tokenizer.json", "spec.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_losing_a_build_race_keeps_the_winner(tmp_path: Path, cache_dir: Path) -> None:
    # Another worker's finished build is already in place when ours tries to rename: ours is
    # discarded, the winner's files are untouched, and no staging directory is left behind.
    winner = build_digit_tokenizer(VOCAB_SIZE, tmp_path)
    [final] = list(tmp_path.iterdir())
    before = (final / "tokenizer.json").stat().st_mtime_ns
    spec = json.loads((final / "spec.json").read_text())
    _build_into(final, spec)
    assert [p.name for p in tmp_path.iterdir()] == [final.name]
    assert (final / "tokenizer.json").stat().st_mtime_ns == before
    assert build_digit_tokenizer(VOCAB_SIZE, tmp_path).get_vocab() == winner.get_vocab()


@pytest.mark.slow
def test_concurrent_builders_share_one_result(tmp_path: Path) -> None:
    # Two processes build the same tokenizer into the same cache at the same time: both must
    # succeed, and exactly one finished directory (no staging directory) must remain.
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from trainables.models.tokenizer import build_digit_tokenizer\n"
        "print(len(build_digit_tokenizer(400, Path(sys.argv[1]))))\n"
    )
    environment = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)],
            cwd=PROJECT_ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    for worker, (stdout, stderr) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, stderr
        assert stdout.strip() == "400"
    assert [p.name.startswith("digit-bpe-400-") for p in tmp_path.iterdir()] == [True]


@pytest.mark.parametrize(
    ("vocab_size", "error"),
    [(MIN_VOCAB_SIZE - 1, ValueError), (512.0, TypeError), (True, TypeError)],
)
def test_bad_vocab_size(tmp_path: Path, vocab_size, error) -> None:
    with pytest.raises(error, match="vocab_size"):
        build_digit_tokenizer(vocab_size, tmp_path)
