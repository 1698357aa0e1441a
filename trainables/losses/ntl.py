"""`ntl_mse` and `ntl_was`: the Number Token Loss (Zausinger et al., ICML 2025).

Both add to cross-entropy a regression term over the 10-way digit distribution
p = softmax(logits of '0'..'9') at digit positions with target digit y:
- ntl_mse: (Σ_k p_k · k − y)², the squared error of the expected digit (NTL-MSE);
- ntl_was: Σ_k p_k · |k − y|, the Wasserstein-1 distance between p and the one-hot target
  (NTL-WAS, the paper's default).
As in the paper's setting (the authors' `ntloss` with digit_level=True, reweigh=False) p is
normalised over the digit logits only, whatever mass the model puts on other tokens.
Gradients are in closed form, with ∂p_k/∂z_j = p_j (δ_jk − p_k).
"""

from __future__ import annotations

import torch
from pydantic import Field

from trainables.losses.contract import Batch, DigitLoss, digit_distribution
from trainables.losses.params import LossParams


class NTLParams(LossParams):
    alpha: float = Field(0.3, ge=0)
    """weight of the number-token term"""


class NTLMSELoss(DigitLoss):
    name = "ntl_mse"
    Params = NTLParams
    definition = "CE + α·mean over digit positions of (Σ p_k k − y)² (NTL)"

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        p, y, k = digit_distribution(digit_logits, digit)
        mean = p @ k  # (N,) Σ_k p_k k
        error = mean - y.squeeze(1)  # (N,)
        # ∂(m − y)²/∂z_j = 2 (m − y) p_j (j − m)
        grad = (2.0 * error).unsqueeze(1) * p * (k - mean.unsqueeze(1))
        return error.square(), grad


class NTLWassersteinLoss(DigitLoss):
    name = "ntl_was"
    Params = NTLParams
    definition = "CE + α·mean Σ p_k |k − y| (NTL-WAS)"

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        p, y, k = digit_distribution(digit_logits, digit)
        distance = (k - y).abs()  # (N, 10) |k − y|
        term = (p * distance).sum(-1)  # (N,)
        # ∂ Σ_k p_k d_k / ∂z_j = p_j (d_j − Σ_k p_k d_k)
        return term, p * (distance - term.unsqueeze(1))
