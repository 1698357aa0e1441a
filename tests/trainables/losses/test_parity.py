"""Parity with the authors' own packages: `ntloss` (NTL, ICML 2025) and `EMOLoss` (EMO).

Both are test-only dependencies. Where the definitions differ by design the test feeds them
like with like:
- `ntloss` does not shift: its logits[:, t] are scored against labels[:, t]. It gets the
  already-shifted pair (logits[:, :-1], labels[:, 1:]).
- `ntloss` returns the number-token term alone, averaged over positions whose label is a
  digit token; our loss returns CE + alpha · that term, with the term in parts["aux"]. Its
  number tokens (digit_level=True) are the vocabulary's single ASCII characters '0'..'9',
  the same ten ids `NumberVocab.from_tokenizer` finds. reweigh=False is the paper's setting.
- `EMOLoss` shifts like us and returns the full mode-1 loss, so values compare directly.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.trained_tokenizers import byte_level_bpe
from trainables.losses import NumberVocab, build_loss

ntloss = pytest.importorskip("ntloss")
emo_loss_module = pytest.importorskip("emo.loss")


def _digit_heavy_batch(
    vocab: NumberVocab, vocab_size: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random logits and labels where about half of the labels are digits, some ignored."""
    gen = torch.Generator().manual_seed(seed)
    batch, length = 3, 40
    labels = torch.randint(0, vocab_size, (batch, length), generator=gen)
    digits = torch.tensor(vocab.digit_ids)[torch.randint(0, 10, (batch, length), generator=gen)]
    labels = torch.where(torch.rand(batch, length, generator=gen) < 0.5, digits, labels)
    labels[torch.rand(batch, length, generator=gen) < 0.1] = -100
    logits = 2 * torch.randn(batch, length, vocab_size, generator=gen)
    # give the digit tokens real mass so that the digit distribution is far from uniform
    logits[..., list(vocab.digit_ids)] += 3 * torch.randn(batch, length, 10, generator=gen)
    return logits, labels


@pytest.mark.parametrize(
    ("ours", "make_theirs"),
    [
        ("ntl_was", lambda tok: ntloss.NTLoss(tok, digit_level=True, reweigh=False)),
        (
            "ntl_mse",
            lambda tok: ntloss.NTLossDotProduct(
                tok, digit_level=True, reweigh=False, loss_function=F.mse_loss
            ),
        ),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_ntl_matches_ntloss(ours: str, make_theirs, seed: int) -> None:
    tokenizer = byte_level_bpe(split_digits=True)
    vocab = NumberVocab.from_tokenizer(tokenizer)
    theirs = make_theirs(tokenizer)
    vocab_size = len(tokenizer)
    # ntloss's own view of which ids are digits must be ours
    assert sorted(theirs.number_token_ids.tolist()) == sorted(vocab.digit_ids)
    logits, labels = _digit_heavy_batch(vocab, vocab_size, seed)

    ours_logits = logits.clone().requires_grad_(True)
    out = build_loss(ours, vocab, alpha=1.0)(ours_logits, labels)
    mle_logits = logits.clone().requires_grad_(True)
    build_loss("mle", vocab)(mle_logits, labels).loss.backward()
    out.loss.backward()

    their_logits = logits.clone().requires_grad_(True)
    their_term = theirs(their_logits[:, :-1], labels[:, 1:])
    their_term.backward()

    torch.testing.assert_close(out.parts["aux"], their_term.detach(), rtol=1e-5, atol=1e-6)
    # gradients of the term alone: ours with alpha = 1 minus plain cross-entropy
    torch.testing.assert_close(
        ours_logits.grad - mle_logits.grad, their_logits.grad, rtol=1e-4, atol=1e-6
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_emo_matches_emoloss_package(seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    batch, length, vocab_size, dim = 2, 23, 50, 16
    logits = 2 * torch.randn(batch, length, vocab_size, generator=gen)
    labels = torch.randint(0, vocab_size, (batch, length), generator=gen)
    labels[torch.rand(batch, length, generator=gen) < 0.2] = -100
    # a peaked position, so that the min(·, 3) cap is exercised as well
    logits[0, 3, labels[0, 4].clamp_min(0)] += 12.0
    embedding = torch.randn(vocab_size, dim, generator=gen)

    ours_logits = logits.clone().requires_grad_(True)
    ours = build_loss("emo", None, cost_embedding=embedding)(ours_logits, labels).loss
    ours.backward()
    their_logits = logits.clone().requires_grad_(True)
    theirs = emo_loss_module.EMOLoss(their_logits, labels, embedding, mode=1)
    theirs.backward()

    torch.testing.assert_close(ours, theirs.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours_logits.grad, their_logits.grad, rtol=1e-4, atol=1e-7)
