"""`NumberVocab`: the token ids of the ten digits and the decimal point.

The digit losses and the digit metrics need to know which vocabulary ids are the bare
one-character tokens '0'..'9' (and '.'). `NumberVocab.from_tokenizer` finds them in any
Hugging Face tokenizer and refuses tokenizers that put several digits into one token (GPT-2
style), where a per-digit loss has no meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

DIGIT_CHARS = tuple("0123456789")
DOT_CHAR = "."
# Strings that must come out of the tokenizer one digit (or '.') per token: plain integers, a
# decimal, and numbers inside text (so that a space or word prefix does not hide a merge).
_PROBE_TEXTS = ("12345", "3.14", "x = 2024.0625 and 99 or 1000000.")


@dataclass(frozen=True)
class NumberVocab:
    """Vocabulary ids of the digits '0'..'9' (in that order) and of '.' (or None).

    `digit_ids[k]` is the id of the token for digit k. `dot_id` is None when the tokenizer has
    no bare '.' token; the digit-entropy loss then treats every number as an integer.
    """

    digit_ids: tuple[int, ...]
    dot_id: int | None = None
    # Per-device copies of `digit_ids` as a tensor, so that a training step does not copy ten
    # ints to the accelerator every call. Not part of equality or repr.
    _id_tensors: dict[torch.device, torch.Tensor] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    # The id of '0' when '0'..'9' are ten consecutive ids (most vocabularies), else None:
    # lets `digits.digit_values` subtract instead of comparing against ten ids.
    first_digit_id: int | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        ids = tuple(self.digit_ids)
        if len(ids) != 10:
            raise ValueError(f"NumberVocab: digit_ids must hold 10 ids ('0'..'9'), got {len(ids)}")
        for k, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int) or i < 0:
                raise ValueError(
                    f"NumberVocab: digit_ids[{k}] must be a non-negative int, got {i!r}"
                )
        if len(set(ids)) != 10:
            raise ValueError(f"NumberVocab: digit_ids must be distinct, got {ids}")
        dot_id = self.dot_id
        if dot_id is not None:
            if isinstance(dot_id, bool) or not isinstance(dot_id, int) or dot_id < 0:
                raise ValueError(f"NumberVocab: dot_id must be a non-negative int, got {dot_id!r}")
            if dot_id in ids:
                raise ValueError(f"NumberVocab: dot_id {dot_id} is also a digit id")
        # Accept any sequence (a list, a tensor's tolist()) but store a hashable tuple.
        object.__setattr__(self, "digit_ids", ids)
        consecutive = ids == tuple(range(ids[0], ids[0] + 10))
        object.__setattr__(self, "first_digit_id", ids[0] if consecutive else None)

    def __getstate__(self) -> dict[str, Any]:
        # Pickled for other processes (Ray workers): drop the per-device tensor cache, which
        # may hold accelerator tensors the receiving process cannot load.
        return {**self.__dict__, "_id_tensors": {}}

    @property
    def max_id(self) -> int:
        """The largest id held, so a caller can check it against the logits' vocabulary size."""
        return max(*self.digit_ids, -1 if self.dot_id is None else self.dot_id)

    def digit_id_tensor(self, device: torch.device | str) -> torch.Tensor:
        """`digit_ids` as a LongTensor (10,) on `device` (cached per device)."""
        device = torch.device(device)
        ids = self._id_tensors.get(device)
        if ids is None:
            ids = torch.tensor(self.digit_ids, dtype=torch.long, device=device)
            self._id_tensors[device] = ids
        return ids

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> NumberVocab:
        """Find the bare '0'..'9' and '.' tokens of a Hugging Face tokenizer.

        Raises ValueError naming the tokenizer when a digit has no bare one-character token,
        or when numbers tokenize into multi-digit tokens (e.g. GPT-2's '123'): digit losses
        are meaningless there. A missing bare '.' only sets `dot_id` to None.
        """
        name = _tokenizer_name(tokenizer)
        vocab = tokenizer.get_vocab()  # token string -> id; the bare token is what counts
        missing = [c for c in DIGIT_CHARS if c not in vocab]
        if missing:
            raise ValueError(
                f"tokenizer {name} has no bare single-character token for digit(s) "
                f"{', '.join(repr(c) for c in missing)}: digit losses need '0'..'9' as tokens"
            )
        digit_ids = [int(vocab[c]) for c in DIGIT_CHARS]
        dot_id = int(vocab[DOT_CHAR]) if DOT_CHAR in vocab else None
        digit_set = set(digit_ids)
        for text in _PROBE_TEXTS:
            ids = tokenizer.encode(text, add_special_tokens=False)
            pieces = tokenizer.convert_ids_to_tokens(ids)
            for token_id, piece in zip(ids, pieces, strict=True):
                # Any token that carries a digit must be one of the ten bare digit tokens;
                # '12', '.5' or 'Ġ7' would mean the digits are not seen one at a time.
                if any(ch.isdigit() for ch in piece) and token_id not in digit_set:
                    raise ValueError(
                        f"tokenizer {name} encodes {text!r} with the multi-character token "
                        f"{piece!r} (id {token_id}); digit losses need one token per digit "
                        f"(tokens: {pieces})"
                    )
        return cls(digit_ids=digit_ids, dot_id=dot_id)


def _tokenizer_name(tokenizer: Any) -> str:
    path = getattr(tokenizer, "name_or_path", "") or "<unnamed>"
    return f"{type(tokenizer).__name__}({path!r})"
