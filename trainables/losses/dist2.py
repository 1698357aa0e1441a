"""`dist2`: DIST2Loss, cross-entropy plus a KL term towards a distance-shaped digit target.

At a digit position with target y the target distribution over the ten digits is
p_d(k) ∝ exp(−(k − y)² / tau), a discretised Gaussian around y; the term is KL(p_d ‖ p) with
p = softmax over the 10 digit logits. Near misses are penalised less than far ones.
The gradient w.r.t. the digit logits is p − p_d.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import torch

from trainables.losses.contract import Batch, DigitLoss, HyperParam, digit_distribution


class Dist2Loss(DigitLoss):
    name = "dist2"
    hyperparams: ClassVar[Mapping[str, HyperParam]] = {
        "alpha": HyperParam(0.1, low=0.0, doc="weight of the KL term"),
        "tau": HyperParam(1.0, low=0.0, low_open=True, doc="temperature of the target"),
    }

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        p, y, k = digit_distribution(digit_logits, digit)
        tau = float(self.params["tau"])
        target_log = torch.log_softmax((k - y).square() / -tau, dim=-1)  # (N, 10) log p_d
        target = target_log.exp()
        log_p = torch.log_softmax(digit_logits, dim=-1)  # (N, 10)
        return (target * (target_log - log_p)).sum(-1), p - target
