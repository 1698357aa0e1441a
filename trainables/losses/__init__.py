"""Numeric-learning losses for causal language models: one file per loss, one registry.

    from trainables.losses import NumberVocab, build_loss, LOSSES
    vocab = NumberVocab.from_tokenizer(tokenizer)
    loss_fn = build_loss("del", vocab, alpha=0.01, decay_base=1.02)
    out = loss_fn(logits, labels)    # logits (B, T, V); labels (B, T) long, -100 = ignore
    out.loss, out.parts["ce"], out.n_tokens, out.n_digits

See `contract` for the shift, the token means and the `normalizer` for global-batch means, and
`params` for the parameter models every loss declares.
"""

from trainables.losses.contract import LossOutput, TokenLoss, target_counts
from trainables.losses.digits import number_places
from trainables.losses.params import LossParams, ParamError, ParamSpec
from trainables.losses.registry import LOSSES, build_loss, loss_class, loss_params, param_columns
from trainables.losses.vocab import NumberVocab

__all__ = [
    "LOSSES",
    "LossOutput",
    "LossParams",
    "NumberVocab",
    "ParamError",
    "ParamSpec",
    "TokenLoss",
    "build_loss",
    "loss_class",
    "loss_params",
    "number_places",
    "param_columns",
    "target_counts",
]
