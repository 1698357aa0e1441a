"""`dist2`: DIST2Loss, cross-entropy plus a KL term towards a distance-shaped digit target.

At a digit position with target y the target distribution over the ten digits is
p_d(k) ∝ exp(−(k − y)² / tau), a discretised Gaussian around y; the term is KL(p_d ‖ p) with
p = softmax over the 10 digit logits. Near misses are penalised less than far ones.
The gradient w.r.t. the digit logits is p − p_d.
"""

from __future__ import annotations

import torch
from pydantic import Field

from trainables.losses.contract import Batch, DigitLoss, digit_distribution
from trainables.losses.params import LossParams


class Dist2Params(LossParams):
    alpha: float = Field(0.1, ge=0)
    """weight of the KL term"""
    tau: float = Field(1.0, gt=0)
    """temperature of the target distribution"""


class Dist2Loss(DigitLoss):
    name = "dist2"
    Params = Dist2Params
    definition = "CE + α·KL(p_d ‖ p), p_d ∝ exp(−(k−y)²/τ) (DIST2Loss)"

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        p, y, k = digit_distribution(digit_logits, digit)
        tau = float(self.params.tau)
        target_log = torch.log_softmax((k - y).square() / -tau, dim=-1)  # (N, 10) log p_d
        target = target_log.exp()
        log_p = torch.log_softmax(digit_logits, dim=-1)  # (N, 10)
        return (target * (target_log - log_p)).sum(-1), p - target
