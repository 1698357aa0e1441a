"""The one contract every loss follows: inputs, shift, token means, outputs, hyper-parameters.

A loss is a callable object: `loss_fn(logits, labels, normalizer=None) -> LossOutput`.

- `logits` (B, T, V) float of any dtype; all arithmetic is in fp32 (fp64 for fp64 logits).
- `labels` (B, T) long, aligned with the input ids as in Hugging Face causal LMs; -100 means
  ignore. The loss shifts them: the logits at position t are scored against labels[:, t + 1]
  (the last position predicts nothing).
- Every mean is over non-ignored shifted positions ("tokens") or, for the auxiliary term of
  the digit losses, over tokens whose target is a digit ("digit positions").

Global-batch means (gradient accumulation, data parallel). By default the means use this
batch's own counts. Pass `normalizer={"n_tokens": N, "n_digits": D}` with the counts of the
whole global batch (e.g. the all-reduced sum of `target_counts` over every micro-batch and
rank) and each mean becomes this batch's *contribution* sum / N (resp. sum / D): summing
`loss` (and `parts`) over the micro-batches and ranks then gives exactly the token mean over
the global batch. "n_digits" is only needed by digit losses. A count of 0 gives a term of 0.

Each loss class declares its hyper-parameters once, as a pydantic model (`Params`, a
`params.LossParams` with defaults, allowed ranges and a docstring per field), the names of the
parts it returns (`parts`), a one-line `definition` (the README's loss table), the non-tunable
inputs it requires (`required_inputs`) and how it takes them from the model (`model_inputs`,
e.g. EMO's frozen `cost_embedding`), whether it needs digit tokens (`needs_digits`), and whether
it is the token cross-entropy plus an auxiliary term (`auxiliary`; then `LossOutput.aux_term`
holds that term, weight included, so the worker can tell the two gradients apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from trainables.losses.cross_entropy import compute_dtype, token_nll, with_gradient
from trainables.losses.digits import digit_values
from trainables.losses.params import LossParams, validate_params
from trainables.losses.vocab import NumberVocab

IGNORE_INDEX = -100
NORMALIZER_KEYS = ("n_tokens", "n_digits")


@dataclass(frozen=True)
class LossOutput:
    """What a loss returns.

    loss: differentiable 0-dim tensor (compute dtype).
    parts: named, detached 0-dim tensors, exactly the loss class's `parts`: always "ce" (the
        token cross-entropy, with the same denominator as `loss`); digit losses add "aux" (their
        auxiliary term before alpha). Every part is this batch's contribution, like `loss`:
        under a global `normalizer` the sum over micro-batches and ranks is the step's value.
    n_tokens: 0-dim long tensor, non-ignored shifted positions in this batch.
    n_digits: 0-dim long tensor, positions whose target is a digit (digit losses; else None).
    aux_term: losses with `auxiliary` only (else None): the auxiliary term with its weight
        (α·aux of the digit losses, λ·log C of `compensated`), differentiable, a contribution
        like `loss`, such that `loss` = the token cross-entropy (the "ce" part) + `aux_term`.
        `loss − aux_term` and `aux_term` are the two halves whose gradients the manipulation
        check compares (`trainables.worker.aux_gradient`).
    """

    loss: torch.Tensor
    parts: dict[str, torch.Tensor]
    n_tokens: torch.Tensor
    n_digits: torch.Tensor | None = None
    aux_term: torch.Tensor | None = None


@dataclass(frozen=True)
class Batch:
    """One batch after the shift, flattened over (B, T) into N = B * T rows."""

    logits: torch.Tensor  # (N, V) the caller's dtype (a view, no copy)
    targets: torch.Tensor  # (B, T) long: targets[b, t] is what logits at (b, t) predict
    valid: torch.Tensor  # (N,) bool, target != -100
    n_tokens: torch.Tensor  # 0-dim long, valid.sum()
    token_denominator: torch.Tensor  # 0-dim compute dtype, >= 1
    normalizer: Mapping[str, Any] | None
    dtype: torch.dtype = field(default=torch.float32)  # compute dtype

    @property
    def flat_targets(self) -> torch.Tensor:  # (N,)
        return self.targets.reshape(-1)


def shift_labels(labels: torch.Tensor) -> torch.Tensor:
    """(B, T) labels -> (B, T) targets: targets[:, t] = labels[:, t + 1], last column -100.

    Shifting the labels (not the logits) keeps the logits a free (B*T, V) view.
    """
    return F.pad(labels[:, 1:], (0, 1), value=IGNORE_INDEX)


def target_counts(
    labels: torch.Tensor, vocab: NumberVocab | None = None
) -> dict[str, torch.Tensor]:
    """Counts of one batch, for building the global `normalizer` before the loss is called.

    labels: (B, T) long, unshifted. Returns {"n_tokens": ..., "n_digits": ...} as 0-dim long
    tensors ("n_digits" only when `vocab` is given), counted exactly as the losses count.
    """
    targets = shift_labels(labels)
    counts = {"n_tokens": (targets != IGNORE_INDEX).sum()}
    if vocab is not None:
        counts["n_digits"] = (digit_values(targets, vocab) >= 0).sum()
    return counts


class TokenLoss:
    """Base of every loss: checks inputs, shifts labels, counts tokens, returns LossOutput.

    Subclasses set `name`, `Params`, `parts`, `definition`, `needs_digits`, `required_inputs`
    (with `model_inputs`), `auxiliary`, and implement `forward(batch) -> LossOutput`; the
    validated hyper-parameters are `self.params` (an instance of `Params`).
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[LossParams]] = LossParams
    parts: ClassVar[tuple[str, ...]] = ("ce",)
    definition: ClassVar[str] = ""
    required_inputs: ClassVar[tuple[str, ...]] = ()
    needs_digits: ClassVar[bool] = False
    auxiliary: ClassVar[bool] = False
    """The loss is the token cross-entropy plus a weighted auxiliary term, which its output
    gives as `LossOutput.aux_term`; the worker then measures that term's gradient against
    the cross-entropy's at every evaluation (`train/aux_grad_ratio`, …). False for losses that
    reweight or replace the cross-entropy (mle, mixce, emo): there is no term to measure."""

    def __init__(self, vocab: NumberVocab | None = None, **params: Any) -> None:
        if vocab is not None and not isinstance(vocab, NumberVocab):
            raise TypeError(f"loss {self.name!r}: vocab must be a NumberVocab, got {type(vocab)}")
        if self.needs_digits and vocab is None:
            raise ValueError(
                f"loss {self.name!r} needs digit tokens: pass a NumberVocab "
                "(NumberVocab.from_tokenizer(tokenizer))"
            )
        self.vocab = vocab
        hyper = {k: v for k, v in params.items() if k not in self.required_inputs}
        self.params = validate_params(self.name, self.Params, hyper)
        missing = [k for k in self.required_inputs if k not in params]
        if missing:
            raise ValueError(f"loss {self.name!r} requires {', '.join(map(repr, missing))}")

    @classmethod
    def model_inputs(cls, model: torch.nn.Module, *, zero3: bool = False) -> dict[str, Any]:
        """The `required_inputs` this loss takes from the model, called once before training
        (`zero3`: the model's parameters are ZeRO-3 partitions, to be gathered first). The worker
        calls it for every loss and passes the result to `build_loss`; none by default."""
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.model_dump().items())
        return f"{type(self).__name__}({args})"

    def __call__(
        self,
        logits: torch.Tensor,
        labels: torch.Tensor,
        normalizer: Mapping[str, Any] | None = None,
    ) -> LossOutput:
        """Loss of one batch.

        logits (B, T, V) float, any dtype; labels (B, T) long, unshifted, -100 = ignore.
        normalizer: None for means over this batch, or {"n_tokens": N, "n_digits": D} with the
        global batch's counts (ints, floats or 0-dim tensors; "n_digits" for digit losses):
        then every mean is this batch's sum / N (or / D), and summing `loss` over micro-batches
        and ranks gives the exact global token mean. See the module docstring.
        """
        self._check_inputs(logits, labels, normalizer)
        targets = shift_labels(labels)  # (B, T)
        valid = targets.reshape(-1) != IGNORE_INDEX  # (N,)
        n_tokens = valid.sum()
        dtype = compute_dtype(logits.dtype)
        batch = Batch(
            logits=logits.reshape(-1, logits.shape[-1]),
            targets=targets,
            valid=valid,
            n_tokens=n_tokens,
            token_denominator=_denominator(normalizer, "n_tokens", n_tokens, dtype),
            normalizer=normalizer,
            dtype=dtype,
        )
        return self.forward(batch)

    def forward(self, batch: Batch) -> LossOutput:
        raise NotImplementedError

    def _check_inputs(
        self, logits: torch.Tensor, labels: torch.Tensor, normalizer: Mapping[str, Any] | None
    ) -> None:
        if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
            raise TypeError(f"loss {self.name!r}: logits must be a float tensor")
        if not isinstance(labels, torch.Tensor) or labels.dtype != torch.long:
            raise TypeError(f"loss {self.name!r}: labels must be a LongTensor")
        if logits.dim() != 3 or labels.dim() != 2 or logits.shape[:2] != labels.shape:
            raise ValueError(
                f"loss {self.name!r}: expected logits (B, T, V) and labels (B, T), got "
                f"{tuple(logits.shape)} and {tuple(labels.shape)}"
            )
        if self.vocab is not None and self.vocab.max_id >= logits.shape[-1]:
            raise ValueError(
                f"loss {self.name!r}: NumberVocab id {self.vocab.max_id} is outside the "
                f"logits' vocabulary of size {logits.shape[-1]}"
            )
        if normalizer is not None:
            unknown = sorted(set(normalizer) - set(NORMALIZER_KEYS))
            if unknown:
                raise ValueError(
                    f"loss {self.name!r}: unknown normalizer key(s) {unknown} "
                    f"(known: {list(NORMALIZER_KEYS)})"
                )
            needed = ["n_tokens", "n_digits"] if self.needs_digits else ["n_tokens"]
            for key in needed:
                if key not in normalizer:
                    raise ValueError(f"loss {self.name!r}: normalizer lacks {key!r}")
                value = normalizer[key]
                if isinstance(value, int | float) and value < 0:
                    raise ValueError(f"loss {self.name!r}: normalizer {key!r} is negative")


class DigitLoss(TokenLoss):
    """Base of the digit losses: CE + alpha · (mean over digit positions of a per-digit term).

    Subclasses implement `digit_term`, which returns the term per row and its gradient w.r.t.
    the ten digit logits in closed form; it runs without autograd, and the gradient is added
    straight into the cross-entropy's (N, V) gradient (see `cross_entropy`). Rows that are not
    digit positions are masked out here, so the term may hold any finite value there.
    Only first derivatives are available (no double backward).
    """

    needs_digits = True
    parts = ("ce", "aux")
    auxiliary = True

    def forward(self, batch: Batch) -> LossOutput:
        assert self.vocab is not None  # guaranteed by needs_digits
        ids = self.vocab.digit_id_tensor(batch.logits.device)  # (10,)
        nll, digit_logits = token_nll(batch.logits, batch.flat_targets, ids)  # (N,), (N, 10)
        with torch.no_grad():
            digit = digit_values(batch.targets, self.vocab)  # (B, T), -1 where not a digit
            is_digit = (digit >= 0).reshape(-1)  # (N,)
            n_digits = is_digit.sum()
            denominator = _denominator(batch.normalizer, "n_digits", n_digits, batch.dtype)
            term, grad = self.digit_term(digit_logits, digit, batch)  # (N,), (N, 10)
            # where (not multiply) so that a non-finite value at a non-digit row cannot leak;
            # the denominator is clamped >= 1, so no digit position gives 0 / 1 = 0, not NaN
            aux_value = torch.where(is_digit, term, 0.0).sum() / denominator
            aux_grad = torch.where(is_digit.unsqueeze(1), grad, 0.0) / denominator
        aux = with_gradient(digit_logits, aux_value, aux_grad)
        ce = nll.sum() / batch.token_denominator
        aux_term = float(self.params.alpha) * aux
        parts = {"ce": ce.detach(), "aux": aux_value}
        return LossOutput(
            loss=ce + aux_term,
            parts=parts,
            n_tokens=batch.n_tokens,
            n_digits=n_digits,
            aux_term=aux_term,
        )

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The per-row term (N,) and its gradient w.r.t. the digit logits (N, 10).

        digit_logits: (N, 10) raw logits of '0'..'9' (compute dtype); digit: (B, T) target
        digit value, -1 where the target is not a digit (rows are flattened as N = B * T).
        """
        raise NotImplementedError


def digit_distribution(
    digit_logits: torch.Tensor, digit: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Shared inputs of the digit terms: p = softmax over the ten digit logits (N, 10), the
    target value y (N, 1) (0 where not a digit) and the digit values k = 0..9 (10,), all in
    the logits' dtype."""
    p = digit_logits.softmax(-1)
    y = digit.reshape(-1, 1).clamp_min(0).to(digit_logits.dtype)
    k = torch.arange(10, dtype=digit_logits.dtype, device=digit_logits.device)
    return p, y, k


def _denominator(
    normalizer: Mapping[str, Any] | None, key: str, local: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """The global count from `normalizer` or the local count, as a dtype scalar clamped >= 1."""
    count = local if normalizer is None else normalizer[key]
    if not isinstance(count, torch.Tensor):
        count = torch.tensor(count)
    return count.to(device=local.device, dtype=dtype).clamp_min(1)
