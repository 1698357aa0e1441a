"""`del`: the digit entropy loss (DEL), cross-entropy plus a place-weighted per-digit BCE.

At a digit position t with target digit y and raw digit logits z_0..z_9 the term is
    u(t) · mean_k [ p̂_k · BCE(σ(z_k), 1[k = y]) ],
with p̂ = softmax over the 10 digit logits (not detached), so each binary "is it digit k?"
decision is weighted by the mass the model puts on k. u(t) weights the digit by its place
in the number (see `digits.place_weights`): 2(i + 1) for integer place i, decay_base^-(k+1)
for decimal place k. `distance=True` multiplies each term by |k − y| (the paper's ablation that
puts the distance term back). The aux term is the mean over (digit positions × 10 digits).

Gradient, with b_k = BCE_k · w_k (w_k = |k − y| or 1) and S = Σ_k p̂_k b_k:
∂S/∂z_j = p̂_j (b_j − S) + p̂_j w_j (σ(z_j) − 1[j = y]).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from trainables.losses.contract import Batch, DigitLoss, digit_distribution
from trainables.losses.digits import dot_mask, place_weights, places_from_masks
from trainables.losses.params import LossParams


class DigitEntropyParams(LossParams):
    alpha: float = Field(0.01, ge=0)
    """weight of the digit term"""
    decay_base: float = Field(1.02, gt=0)
    """base β of the decimal places' decay"""
    distance: bool = False
    """multiply each digit's term by |k − y| (the paper's ablation)"""


class DigitEntropyLoss(DigitLoss):
    name = "del"
    Params = DigitEntropyParams
    definition = (
        "CE + α·mean u(t)·p̂_k·BCE(σ(z_k), 1[k=y]); u linear in integer places, β^−(k+1) in "
        "decimal places (DEL)"
    )

    def digit_term(
        self, digit_logits: torch.Tensor, digit: torch.Tensor, batch: Batch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.vocab is not None
        dtype = digit_logits.dtype
        integer_place, decimal_place = places_from_masks(
            digit >= 0, dot_mask(batch.targets, self.vocab)
        )  # (B, T) each
        decay_base = float(self.params.decay_base)
        weight = place_weights(integer_place, decimal_place, decay_base, dtype).reshape(-1, 1)
        p, y, k = digit_distribution(digit_logits, digit)
        is_target = (k == y).to(dtype)  # (N, 10) 1[k = y]
        bce = F.binary_cross_entropy_with_logits(digit_logits, is_target, reduction="none")
        d_bce = torch.sigmoid(digit_logits) - is_target  # (N, 10) ∂BCE_k/∂z_k
        if self.params.distance:
            distance = (k - y).abs()
            bce, d_bce = bce * distance, d_bce * distance
        total = (p * bce).sum(-1, keepdim=True)  # (N, 1) S
        scale = weight / 10.0  # (N, 1) u(t) / 10: the mean over the ten digits
        grad = scale * p * (bce - total + d_bce)
        return (scale * total).squeeze(1), grad
