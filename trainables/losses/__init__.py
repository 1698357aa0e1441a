"""Numeric-learning losses for causal language models: one file per loss, one registry.

    from trainables.losses import NumberVocab, build_loss, LOSSES
    vocab = NumberVocab.from_tokenizer(tokenizer)
    loss_fn = build_loss("del", vocab, alpha=0.01, decay_base=1.02)
    out = loss_fn(logits, labels)    # logits (B, T, V); labels (B, T) long, -100 = ignore
    out.loss, out.parts["ce"], out.n_tokens, out.n_digits

See `contract` for the shift, the token means and the `normalizer` for global-batch means.
"""

from trainables.losses.contract import HyperParam, LossOutput, TokenLoss, target_counts
from trainables.losses.digits import number_places
from trainables.losses.registry import LOSSES, build_loss
from trainables.losses.vocab import NumberVocab

__all__ = [
    "LOSSES",
    "HyperParam",
    "LossOutput",
    "NumberVocab",
    "TokenLoss",
    "build_loss",
    "number_places",
    "target_counts",
]
