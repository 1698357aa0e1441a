"""The losses' kernels: the fused cross-entropy (`token_nll`: gradcheck, bf16) and compensated's
chunked rank count.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.trainables.losses.loss_inputs import V, random_batch
from trainables.losses.cross_entropy import token_nll

# ------------------------------------------------------------------ the fused CE kernel


def test_token_nll_gradcheck() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(7, V, dtype=torch.float64, generator=gen, requires_grad=True)
    targets = torch.tensor([3, -100, 11, 0, 9, -100, 10])
    ids = torch.tensor([9, 1, 2, 3, 4, 5, 6, 7, 8, 0])  # any order: a column gather
    torch.autograd.gradcheck(lambda x: token_nll(x, targets, ids), (logits,))
    torch.autograd.gradcheck(lambda x: token_nll(x, targets, ids)[1].square().sum(), (logits,))


def test_token_nll_bf16_matches_autograd() -> None:
    logits, _ = random_batch(13, batch=1, length=30)
    low = logits[0].to(torch.bfloat16).requires_grad_(True)
    targets = torch.randint(0, V, (30,))
    nll, digit_logits = token_nll(low, targets, torch.arange(10))
    (nll.sum() + digit_logits.square().sum()).backward()
    ref = low.detach().float().requires_grad_(True)
    ref_nll = F.cross_entropy(ref, targets, reduction="none")
    (ref_nll.sum() + ref[:, :10].square().sum()).backward()
    torch.testing.assert_close(nll, ref_nll)
    torch.testing.assert_close(low.grad.float(), ref.grad.to(torch.bfloat16).float())


def test_rank_based_error_chunked_equals_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainables.losses import compensated

    logits, labels = random_batch(14, batch=3, length=20)
    rows = logits.reshape(-1, V).round()  # ties: "strictly above" must not count them
    targets = labels.reshape(-1).clamp_min(0)
    whole = compensated.rank_based_error(rows, targets)
    expected = torch.tensor(
        [int((row > row[t]).sum()) for row, t in zip(rows, targets, strict=True)]
    )
    assert torch.equal(whole, expected)
    monkeypatch.setattr(compensated, "_RANK_CHUNK_ELEMENTS", 7 * V)  # 7 rows per chunk
    assert torch.equal(compensated.rank_based_error(rows, targets), expected)
