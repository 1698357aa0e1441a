"""`mle`: token cross-entropy (maximum likelihood), the baseline every other loss extends."""

from __future__ import annotations

from trainables.losses.contract import Batch, LossOutput, TokenLoss
from trainables.losses.cross_entropy import token_nll


class MLELoss(TokenLoss):
    """Mean over tokens of −log q(y)."""

    name = "mle"
    definition = "token cross-entropy"

    def forward(self, batch: Batch) -> LossOutput:
        nll, _ = token_nll(batch.logits, batch.flat_targets)  # (N,), 0 at ignored rows
        ce = nll.sum() / batch.token_denominator
        return LossOutput(loss=ce, parts={"ce": ce.detach()}, n_tokens=batch.n_tokens)
