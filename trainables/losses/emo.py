"""`emo`: Earth Mover Distance Optimisation (Ren et al., ICLR 2024), mode 1.

With Ê the row-normalised, frozen cost embedding (V, d), q the model's distribution and y the
target, the differentiable EMD upper bound is DEMD = 1 − ê_yᵀ(Êᵀq): one minus the expected
cosine similarity between the target and a token drawn from q. Per token the loss is
½ [nll + min(sg(nll / DEMD), 3) · DEMD] (mode 1 of the authors' `EMOLoss` package: the
DEMD term is rescaled to the size of the nll, capped at 3), averaged over tokens.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.nn.functional as F

from trainables.losses.contract import Batch, LossOutput, TokenLoss
from trainables.losses.vocab import NumberVocab

# As in the authors' package: guards nll / DEMD when q is exactly the target.
_DEMD_EPS = 1e-10
_RATIO_CAP = 3.0


class EMOLoss(TokenLoss):
    name = "emo"
    parts = ("ce", "demd")
    definition = (
        "½[nll + min(sg(nll/DEMD), 3)·DEMD], DEMD from a frozen copy of the output embedding "
        "taken at the start of training (EMO, mode 1)"
    )
    required_inputs = ("cost_embedding",)

    @classmethod
    def model_inputs(cls, model: torch.nn.Module, *, zero3: bool = False) -> dict[str, Any]:
        """The transport cost: a frozen copy (V, d) of the output embedding as it is now, at the
        start of training; training the model does not move it."""
        weight = model.get_output_embeddings().weight
        gather = contextlib.nullcontext()
        if zero3:
            import deepspeed  # ZeRO-3 partitions exist only inside a DeepSpeed worker

            gather = deepspeed.zero.GatheredParameters([weight])
        with gather:
            return {"cost_embedding": weight.detach().clone().requires_grad_(False)}

    def __init__(self, vocab: NumberVocab | None = None, **params: Any) -> None:
        super().__init__(vocab, **params)
        embedding = params["cost_embedding"]
        if not isinstance(embedding, torch.Tensor) or embedding.dim() != 2:
            raise ValueError(
                f"loss 'emo': cost_embedding must be a (V, d) tensor, got "
                f"{getattr(embedding, 'shape', type(embedding))}"
            )
        if not embedding.is_floating_point() or not torch.isfinite(embedding).all():
            raise ValueError("loss 'emo': cost_embedding must hold finite floats")
        # Frozen: detached, normalised once. A zero row (e.g. an untrained padding token)
        # stays zero instead of dividing by zero.
        self.cost_embedding = F.normalize(embedding.detach().float(), dim=1)  # (V, d)
        self._cache: dict[tuple[torch.device, torch.dtype], torch.Tensor] = {}

    def __repr__(self) -> str:
        return f"EMOLoss(cost_embedding={tuple(self.cost_embedding.shape)})"

    def _embedding(self, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
        key = (device, dtype)
        if key not in self._cache:
            self._cache[key] = self.cost_embedding.to(device=device, dtype=dtype)
        return self._cache[key]

    def forward(self, batch: Batch) -> LossOutput:
        vocab_size = batch.logits.shape[-1]
        if self.cost_embedding.shape[0] != vocab_size:
            raise ValueError(
                f"loss 'emo': cost_embedding has {self.cost_embedding.shape[0]} rows but the "
                f"logits have a vocabulary of {vocab_size}"
            )
        emb = self._embedding(batch.logits.device, batch.dtype)  # (V, d) Ê
        targets = batch.flat_targets.clamp_min(0)  # (N,) never index with -100
        log_q = torch.log_softmax(batch.logits.to(batch.dtype), dim=-1)  # (N, V)
        zero = torch.zeros((), dtype=batch.dtype, device=log_q.device)
        nll = torch.where(batch.valid, -log_q.gather(1, targets.unsqueeze(1)).squeeze(1), zero)
        expected_emb = log_q.exp() @ emb  # (N, d) Êᵀq
        demd = 1.0 - (emb[targets] * expected_emb).sum(-1)  # (N,)
        ratio = (nll / (demd + _DEMD_EPS)).detach().clamp_max(_RATIO_CAP)  # (N,)
        per_token = torch.where(batch.valid, 0.5 * (nll + ratio * demd), zero)  # (N,)
        loss = per_token.sum() / batch.token_denominator
        ce = nll.detach().sum() / batch.token_denominator
        demd_mean = torch.where(batch.valid, demd.detach(), zero).sum() / batch.token_denominator
        return LossOutput(loss=loss, parts={"ce": ce, "demd": demd_mean}, n_tokens=batch.n_tokens)
