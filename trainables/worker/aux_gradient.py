"""The manipulation check: how much a loss's auxiliary term changes the training gradient.

A loss with an auxiliary term (`TokenLoss.auxiliary`: the digit losses' α·aux, `compensated`'s
λ·log C) is the token cross-entropy plus that term, and `LossOutput.aux_term` gives the term
with its weight. At an evaluation step the worker takes the global batch of the *next* update
(the one it would train on) at the current weights and computes, over the trainable parameters,
g_ce = ∇(loss − aux_term) and g_aux = ∇aux_term, and reports

    train/aux_grad_ratio       ‖g_aux‖ / ‖g_ce‖: the term's size against CE's, as the update sees it
    train/aux_grad_cos         cos(g_ce, g_aux): whether it pulls with CE (> 0) or against it
    train/aux_grad_turn_deg    the angle between g_ce and g_ce + g_aux, in degrees: how far the
                               term turns the gradient
    train/aux_grad_sign_flips  share of the coordinates with g_ce ≠ 0 where g_ce + g_aux has the
                               other sign (Adam's update follows the signs early on)

A term's share of the loss says little about its dose: study 5's DEL term was 4.3% of the loss
while its gradient was 0.6% of CE's at the pretrained start (issue 59).

It leaves the real training untouched: a forward and two `torch.autograd.grad` calls (one per
half, the graph kept between them) on the DeepSpeed engine's module, not the engine, so nothing
reaches the parameters' `.grad`, DeepSpeed's gradient buffers or its post-accumulation hooks
(ZeRO 1-3, bf16) and the optimizer state does not move; torch's random generators are forked
around it, so dropout draws of later steps are those of a run without it. The micro-batches'
gradients are summed on each rank and then over ranks: that is the gradient of the global
batch's token mean, as in `trainables.worker.loop.train_step`. Memory: two fp32 copies of the
trainable parameters' gradients at those steps (1.1 GB for SmolLM2-135M); a model without room
for them turns the check off (`eval.aux_gradient: false`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from records import metric_names as names
from trainables.losses.contract import TokenLoss
from trainables.metrics.distributed import sum_across_ranks


@dataclass(frozen=True)
class GradientSplit:
    """Sums over the trainable parameters' coordinates of the two gradients g_ce and g_aux
    (each already summed over micro-batches and ranks), in float64."""

    ce_sq: float
    """‖g_ce‖²"""
    aux_sq: float
    """‖g_aux‖²"""
    dot: float
    """g_ce · g_aux"""
    flipped: float
    """Coordinates with g_ce ≠ 0 where g_ce + g_aux has the other sign (or is 0)."""
    nonzero: float
    """Coordinates with g_ce ≠ 0."""

    def metrics(self) -> dict[str, float]:
        """The four `train/aux_grad_*` metrics (NaN where g_ce is 0: nothing to compare with)."""
        ce_norm = math.sqrt(self.ce_sq)
        if ce_norm == 0.0:
            nan = math.nan
            return dict.fromkeys(
                (
                    names.AUX_GRAD_RATIO,
                    names.AUX_GRAD_COS,
                    names.AUX_GRAD_TURN_DEG,
                    names.AUX_GRAD_SIGN_FLIPS,
                ),
                nan,
            )
        aux_norm = math.sqrt(self.aux_sq)
        cos = self.dot / (ce_norm * aux_norm) if aux_norm > 0 else 0.0
        # The angle θ between g_ce and g = g_ce + g_aux from its cosine and sine parts (atan2),
        # which keeps a tiny turn's digits where acos of a cosine near 1 loses them. Lagrange's
        # identity: (‖g_ce‖ ‖g‖ sin θ)² = ‖g_ce‖²‖g‖² − (g_ce·g)² = ‖g_ce‖²‖g_aux‖² − (g_ce·g_aux)²,
        # the right-hand form without the cancellation of two nearly equal terms.
        along = self.ce_sq + self.dot  # g_ce · g
        across_sq = max(self.ce_sq * self.aux_sq - self.dot * self.dot, 0.0)
        turn = math.degrees(math.atan2(math.sqrt(across_sq), along))
        return {
            names.AUX_GRAD_RATIO: aux_norm / ce_norm,
            names.AUX_GRAD_COS: max(-1.0, min(1.0, cos)),
            names.AUX_GRAD_TURN_DEG: turn,
            names.AUX_GRAD_SIGN_FLIPS: self.flipped / self.nonzero,
        }


def split_gradients(
    model: torch.nn.Module,
    loss_fn: TokenLoss,
    batches: Sequence[Mapping[str, torch.Tensor]],
    normalizer: Mapping[str, Any] | None,
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(g_ce, g_aux) per trainable parameter of `model` (fp32, summed over `batches`, this rank
    only): the gradients of `loss − aux_term` and of `aux_term` of `loss_fn` on each batch
    (input_ids, attention_mask, labels; (B, T)) under `normalizer` (the global batch's counts).
    Touches no `.grad`."""
    if not loss_fn.auxiliary:
        raise ValueError(f"loss {loss_fn.name!r} has no auxiliary term to measure")
    params = [p for p in model.parameters() if p.requires_grad]
    ce_sum: list[torch.Tensor] = []
    aux_sum: list[torch.Tensor] = []
    for batch in batches:
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        out = loss_fn(logits, batch["labels"], normalizer)  # logits (B, T, V)
        assert out.aux_term is not None  # the contract of an `auxiliary` loss
        ce = torch.autograd.grad(
            out.loss - out.aux_term, params, retain_graph=True, allow_unused=True
        )
        aux = torch.autograd.grad(out.aux_term, params, allow_unused=True)
        for i, (p, g_ce, g_aux) in enumerate(zip(params, ce, aux, strict=True)):
            g_ce = torch.zeros_like(p, dtype=torch.float32) if g_ce is None else g_ce.float()
            g_aux = torch.zeros_like(p, dtype=torch.float32) if g_aux is None else g_aux.float()
            if i == len(ce_sum):
                ce_sum.append(g_ce)
                aux_sum.append(g_aux)
            else:
                ce_sum[i] += g_ce
                aux_sum[i] += g_aux
        del logits, out, ce, aux
    return ce_sum, aux_sum


def gradient_split(ce: Sequence[torch.Tensor], aux: Sequence[torch.Tensor]) -> GradientSplit:
    """The sums of `GradientSplit` over every coordinate of the gradients `ce` and `aux` (one
    tensor per parameter, the same shapes), in float64."""
    sums = torch.zeros(5, dtype=torch.float64)
    for g_ce, g_aux in zip(ce, aux, strict=True):
        c, a = g_ce.double().reshape(-1), g_aux.double().reshape(-1)  # (n,)
        nonzero = c != 0
        flipped = nonzero & (torch.sign(c + a) != torch.sign(c))
        sums += torch.stack(
            [c @ c, a @ a, c @ a, flipped.sum().double(), nonzero.sum().double()]
        ).cpu()
    return GradientSplit(*sums.tolist())


def aux_gradient_metrics(
    model: torch.nn.Module,
    loss_fn: TokenLoss,
    batches: Sequence[Mapping[str, torch.Tensor]],
    normalizer: Mapping[str, Any] | None,
) -> dict[str, float]:
    """The manipulation check's metrics of `loss_fn` on this step's `batches` (this rank's
    micro-batches of the global batch, `normalizer` its counts), and the seconds it took
    (`perf/aux_grad_s`). All ranks must call it: the gradients are summed over ranks."""
    began = time.perf_counter()
    device = next(model.parameters()).device
    forked = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked), torch.compiler.set_stance("force_eager"):
        ce, aux = split_gradients(model, loss_fn, batches, normalizer)
    ce = [sum_across_ranks(g) for g in ce]
    aux = [sum_across_ranks(g) for g in aux]
    metrics = gradient_split(ce, aux).metrics()
    metrics[names.AUX_GRAD_S] = time.perf_counter() - began
    return metrics
