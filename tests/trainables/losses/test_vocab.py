"""Tests for trainables/losses/vocab.py: NumberVocab and `from_tokenizer` on real tokenizers.

The tokenizers (tests/trained_tokenizers.py) are trained with the `tokenizers` library (no hub
access): a byte-level BPE whose pre-tokenizer splits digits one by one (the setting digit losses
need), and a GPT-2-style byte-level BPE without that splitter, which learns multi-digit tokens.
"""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from tests.trained_tokenizers import byte_level_bpe
from trainables.losses import NumberVocab


def test_from_tokenizer_finds_the_bare_tokens() -> None:
    tok = byte_level_bpe(split_digits=True)
    vocab = NumberVocab.from_tokenizer(tok)
    assert tok.convert_ids_to_tokens(list(vocab.digit_ids)) == list("0123456789")
    assert tok.convert_ids_to_tokens(vocab.dot_id) == "."
    # and they are the ids the tokenizer really produces for a number in text
    ids = tok.encode(" 3.14", add_special_tokens=False)
    assert ids[-4:] == [vocab.digit_ids[3], vocab.dot_id, vocab.digit_ids[1], vocab.digit_ids[4]]


def test_from_tokenizer_rejects_multi_digit_tokens() -> None:
    tok = byte_level_bpe(split_digits=False)
    # the GPT-2-style tokenizer did learn multi-digit tokens (else this test proves nothing)
    pieces = tok.convert_ids_to_tokens(tok.encode("12345", add_special_tokens=False))
    assert len(pieces) < 5
    with pytest.raises(ValueError, match=r"PreTrainedTokenizerFast|TokenizersBackend") as err:
        NumberVocab.from_tokenizer(tok)
    assert "local/gpt2-style-bpe" in str(err.value)
    assert "one token per digit" in str(err.value)


def test_from_tokenizer_rejects_missing_digits() -> None:
    word_level = Tokenizer(models.WordLevel({"[UNK]": 0, "one": 1, "two": 2}, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=word_level, name_or_path="local/words", unk_token="[UNK]"
    )
    with pytest.raises(ValueError, match=r"local/words.*no bare single-character token"):
        NumberVocab.from_tokenizer(tok)


def test_from_tokenizer_without_a_dot_token() -> None:
    vocab = {str(d): d for d in range(10)} | {"[UNK]": 10, "x": 11}
    word_level = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    word_level.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=word_level, unk_token="[UNK]")
    number_vocab = NumberVocab.from_tokenizer(tok)
    assert number_vocab.digit_ids == tuple(range(10))
    assert number_vocab.dot_id is None


@pytest.mark.parametrize(
    ("digit_ids", "dot_id", "message"),
    [
        (list(range(9)), None, "must hold 10 ids"),
        ([0, 1, 2, 3, 4, 5, 6, 7, 8, 8], None, "must be distinct"),
        ([0, 1, 2, 3, 4, 5, 6, 7, 8, -1], None, r"digit_ids\[9\] must be a non-negative int"),
        ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9.0], None, r"digit_ids\[9\]"),
        (list(range(10)), 3, "dot_id 3 is also a digit id"),
        (list(range(10)), -100, "dot_id must be a non-negative int"),
    ],
)
def test_number_vocab_validation(digit_ids: list, dot_id: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        NumberVocab(digit_ids=digit_ids, dot_id=dot_id)


def test_number_vocab_is_hashable_and_compares_by_ids() -> None:
    a = NumberVocab(digit_ids=list(range(10)), dot_id=10)
    b = NumberVocab(digit_ids=tuple(range(10)), dot_id=10)
    a.digit_id_tensor("cpu")  # fills a's cache, which must not affect equality
    assert a == b and hash(a) == hash(b)
    assert a.max_id == 10 and NumberVocab(list(range(10))).max_id == 9


def test_number_vocab_pickles_without_its_tensor_cache() -> None:
    import pickle

    vocab = NumberVocab(digit_ids=[5, 6, 7, 8, 9, 10, 11, 12, 13, 14], dot_id=3)
    vocab.digit_id_tensor("cpu")
    clone = pickle.loads(pickle.dumps(vocab))
    assert clone == vocab and clone.first_digit_id == 5
    assert clone._id_tensors == {}
    assert clone.digit_id_tensor("cpu").tolist() == list(range(5, 15))
