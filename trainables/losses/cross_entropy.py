"""Per-token cross-entropy fused with the digit losses' gradient, in one autograd node.

`token_nll(logits, targets, digit_ids)` returns the per-token negative log-likelihood and the
raw logits of the ten digit tokens at every row. `with_gradient(digit_logits, value, grad)`
attaches a term whose gradient w.r.t. the digit logits was computed in closed form in the
forward pass (the digit losses do this). The backward of `token_nll` then writes a single
(N, V) gradient: softmax − one-hot for the cross-entropy, plus the digit-logit gradient added
in place at the ten digit columns. Autograd over `logits[:, digit_ids]` would materialise a
second (N, V) gradient, and autograd over the small (N, 10) digit math would launch dozens of
tiny kernels per step; on an accelerator those launches, not the arithmetic, are the cost.

Memory: the forward's (N, V) log-softmax is a temporary; the node keeps only the logits
(already alive in the caller's graph). Numerics are in fp32 (fp64 for fp64 logits) whatever
the logits' dtype; the returned gradient has the logits' dtype.
"""

from __future__ import annotations

from typing import Any

import torch


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half-precision logits, the logits' own dtype when it is wider."""
    return torch.promote_types(dtype, torch.float32)


class _TokenNLL(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        logits: torch.Tensor,  # (N, V) any float dtype
        targets: torch.Tensor,  # (N,) long, -100 = ignored
        digit_ids: torch.Tensor,  # (D,) long, D = 10 or 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cdt = compute_dtype(logits.dtype)
        valid = targets >= 0  # (N,)
        safe_targets = targets.clamp_min(0).unsqueeze(1)  # (N, 1), never index with -100
        # one fused kernel, upcasting on the fly; the (N, V) result is a temporary
        log_probs = torch.log_softmax(logits, dim=-1, dtype=cdt)
        target_log_prob = log_probs.gather(1, safe_targets).squeeze(1)  # (N,)
        del log_probs
        nll = torch.where(valid, -target_log_prob, 0.0)  # (N,)
        digit_logits = logits.index_select(1, digit_ids).to(cdt)  # (N, D)
        ctx.save_for_backward(logits, safe_targets, valid, digit_ids)
        ctx.set_materialize_grads(False)
        return nll, digit_logits

    @staticmethod
    def backward(
        ctx: Any, grad_nll: torch.Tensor | None, grad_digits: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, None, None]:
        logits, safe_targets, valid, digit_ids = ctx.saved_tensors
        cdt = compute_dtype(logits.dtype)
        if grad_nll is None and grad_digits is None:
            return None, None, None
        if grad_nll is None:
            grad = torch.zeros(logits.shape, dtype=cdt, device=logits.device)
        else:
            # An ignored row has a constant nll of 0: its whole row of gradient is 0.
            g = torch.where(valid, grad_nll.to(cdt), 0.0).unsqueeze(1)  # (N, 1)
            # d nll / d logits = softmax − one-hot(target), built in one (N, V) buffer
            grad = torch.softmax(logits, dim=-1, dtype=cdt).mul_(g)
            grad.scatter_add_(1, safe_targets, -g)
        if grad_digits is not None:
            grad.index_add_(1, digit_ids, grad_digits.to(cdt))
        return grad.to(logits.dtype), None, None


class _WithGradient(torch.autograd.Function):
    """A value whose gradient w.r.t. one input is known: forward returns `value`, backward
    returns grad_output · `grad`."""

    @staticmethod
    def forward(
        ctx: Any, source: torch.Tensor, value: torch.Tensor, grad: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(grad)
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        (grad,) = ctx.saved_tensors
        return grad * grad_output, None, None


def token_nll(
    logits: torch.Tensor, targets: torch.Tensor, digit_ids: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token cross-entropy and digit logits, differentiable w.r.t. `logits`.

    logits: (N, V) float (any dtype); targets: (N,) long with -100 = ignored;
    digit_ids: (10,) long or None.
    Returns nll (N,) in the compute dtype, 0 at ignored rows, and digit_logits (N, 10) (N, 0
    when `digit_ids` is None): the raw logits of the digit tokens at every row.
    """
    if digit_ids is None:
        digit_ids = torch.zeros(0, dtype=torch.long, device=logits.device)
    return _TokenNLL.apply(logits, targets, digit_ids)


def with_gradient(source: torch.Tensor, value: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """`value` (computed without autograd) made differentiable w.r.t. `source`, with
    d value / d source = `grad` (same shape as `source`)."""
    return _WithGradient.apply(source, value.detach(), grad.detach())
