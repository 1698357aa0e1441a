"""`mixce`: MixCE (Zhang et al., ACL 2023), a mixture of forward and reverse cross-entropy.

Per token: eta · nll + (1 − eta) · sg(q(y)) · nll, with q(y) = exp(−nll) the model's
probability of the target and sg a stop-gradient; the reverse-CE half re-weights each token by
how likely the model already finds it. eta = 1 is plain cross-entropy.
"""

from __future__ import annotations

from pydantic import Field

from trainables.losses.contract import Batch, LossOutput, TokenLoss
from trainables.losses.cross_entropy import token_nll
from trainables.losses.params import LossParams


class MixCEParams(LossParams):
    eta: float = Field(0.5, ge=0, le=1)
    """weight of the forward cross-entropy (1 = plain cross-entropy)"""


class MixCELoss(TokenLoss):
    name = "mixce"
    Params = MixCEParams
    definition = "η·nll + (1−η)·sg(p)·nll (MixCE)"

    def forward(self, batch: Batch) -> LossOutput:
        eta = float(self.params.eta)
        nll, _ = token_nll(batch.logits, batch.flat_targets)  # (N,), 0 at ignored rows
        target_prob = (-nll).exp().detach()  # (N,) sg(q(y)); 1 at ignored rows, times nll = 0
        per_token = eta * nll + (1.0 - eta) * target_prob * nll  # (N,)
        loss = per_token.sum() / batch.token_denominator
        ce = nll.detach().sum() / batch.token_denominator
        return LossOutput(loss=loss, parts={"ce": ce}, n_tokens=batch.n_tokens)
