"""The contract's auxiliary term, over every registered loss: a loss declares `auxiliary` iff its
output carries `aux_term`, and then its loss is exactly the token cross-entropy plus that term,
in value and in gradient (so the manipulation check's two halves are CE's and the term's);
which losses have one is decided here, once, so a new loss must take a side."""

from __future__ import annotations

import torch

from tests.trainables.losses.loss_inputs import make, random_batch
from trainables.losses import LOSSES

AUXILIARY = {"ntl_mse", "ntl_was", "dist2", "del", "compensated"}
"""CE + α·term (the digit losses) and CE + λ·log C (compensated). mle is CE alone; mixce
reweights CE's tokens and emo halves CE and adds a rescaled DEMD: neither is CE plus a term."""


def test_which_losses_have_an_auxiliary_term():
    assert {name for name, cls in LOSSES.items() if cls.auxiliary} == AUXILIARY


def test_the_aux_term_is_what_the_loss_adds_to_cross_entropy(loss_name: str) -> None:
    logits, labels = random_batch(11)
    logits.requires_grad_(True)
    out = make(loss_name)(logits, labels)
    if not LOSSES[loss_name].auxiliary:
        assert out.aux_term is None
        return
    assert out.aux_term is not None and out.aux_term.dim() == 0 and out.aux_term.requires_grad
    ce = out.loss - out.aux_term
    torch.testing.assert_close(ce.detach(), out.parts["ce"])
    (g_ce,) = torch.autograd.grad(ce, logits, retain_graph=True)
    (g_aux,) = torch.autograd.grad(out.aux_term, logits)
    # CE's half is mle's gradient; the term's half is the rest of the loss's gradient.
    plain = logits.detach().clone().requires_grad_(True)
    (g_mle,) = torch.autograd.grad(make("mle")(plain, labels).loss, plain)
    torch.testing.assert_close(g_ce, g_mle)
    full = logits.detach().clone().requires_grad_(True)
    (g_loss,) = torch.autograd.grad(make(loss_name)(full, labels).loss, full)
    torch.testing.assert_close(g_aux, g_loss - g_mle, rtol=1e-5, atol=1e-7)
    assert g_aux.abs().sum() > 0  # the term moves the logits (defaults: α, λ > 0)


def test_the_aux_term_is_a_contribution_under_a_global_normalizer(loss_name: str) -> None:
    """Like `loss`, both halves of two micro-batches under the whole batch's counts sum to the
    whole batch's: the CE half always, the term for the digit losses (compensated's log C is
    nonlinear in the batch: each micro-batch adds its own, token-weighted, by the contract)."""
    if not LOSSES[loss_name].auxiliary:
        return
    from tests.trainables.losses.loss_inputs import VOCAB
    from trainables.losses.contract import target_counts

    logits, labels = random_batch(12, batch=4)
    loss_fn = make(loss_name)
    whole = loss_fn(logits, labels)
    normalizer = {k: int(v) for k, v in target_counts(labels, VOCAB).items()}
    halves = [loss_fn(logits[r], labels[r], normalizer) for r in (slice(0, 2), slice(2, 4))]
    ce_halves = sum(h.loss - h.aux_term for h in halves)
    torch.testing.assert_close(ce_halves, whole.loss - whole.aux_term)
    if LOSSES[loss_name].needs_digits:
        torch.testing.assert_close(sum(h.aux_term for h in halves), whole.aux_term)
