"""Identities between the losses and their definitions: MLE is torch's cross-entropy, the limits
(eta = 1, alpha = 0) are MLE, NTL-WAS's CDF form, compensated's decomposition and loop reference,
and every loss's value and gradient against a plain autograd implementation.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tests.trainables.losses.loss_inputs import VOCAB, V, make, random_batch
from trainables.losses import build_loss


def test_mle_matches_torch_cross_entropy() -> None:
    logits, labels = random_batch()
    expected = F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1))
    torch.testing.assert_close(make("mle")(logits, labels).loss, expected)


def test_mixce_eta_one_is_mle() -> None:
    logits, labels = random_batch(1)
    mixce = make("mixce", eta=1.0)(logits, labels).loss
    torch.testing.assert_close(mixce, make("mle")(logits, labels).loss, rtol=0, atol=0)


def test_del_alpha_zero_is_mle() -> None:
    logits, labels = random_batch(2)
    for distance in (False, True):
        got = make("del", alpha=0.0, distance=distance)(logits, labels).loss
        torch.testing.assert_close(got, make("mle")(logits, labels).loss, rtol=0, atol=0)


def test_ntl_was_equals_cdf_form() -> None:
    # In one dimension W1(p, δ_y) = Σ_{k=0}^{8} |F_p(k) − F_y(k)| with F the CDFs.
    logits, labels = random_batch(3)
    out = make("ntl_was", alpha=1.0)(logits, labels)
    targets = labels[:, 1:].reshape(-1)
    digit_rows = (targets >= 0) & (targets <= 9)
    p = logits[:, :-1].reshape(-1, V)[digit_rows][:, :10].softmax(-1)  # (D, 10)
    cdf_p = p.cumsum(-1)[:, :9]
    cdf_y = (torch.arange(9) >= targets[digit_rows].unsqueeze(1)).float()
    expected = (cdf_p - cdf_y).abs().sum(-1).mean()
    torch.testing.assert_close(out.parts["aux"], expected, rtol=1e-6, atol=1e-6)


def test_compensated_decomposition_identity_fp64() -> None:
    # CE = error entropy + self alignment − log C, exactly (fp64 logits stay fp64)
    for seed in range(3):
        logits, labels = random_batch(seed, batch=4, length=33, vocab_size=40, dtype=torch.float64)
        logits = logits.round()  # integer logits: many ties, so several tokens per rank
        out = build_loss("compensated", VOCAB)(logits, labels)
        parts = out.parts
        rebuilt = parts["error_entropy"] + parts["self_alignment"] - parts["log_confidence"]
        assert parts["ce"].dtype == torch.float64
        assert abs(parts["ce"].item() - rebuilt.item()) < 1e-9


def _compensated_by_loops(logits: torch.Tensor, labels: torch.Tensor, lam: float) -> float:
    """The CE decomposition computed the slow way: one token at a time, a dict of groups."""
    groups: dict[int, list[float]] = {}
    nlls = []
    for b in range(labels.shape[0]):
        for t in range(labels.shape[1] - 1):
            y = int(labels[b, t + 1])
            if y == -100:
                continue
            row = [float(x) for x in logits[b, t]]
            rank = sum(1 for x in row if x > row[y])
            nll = math.log(sum(math.exp(x) for x in row)) - row[y]
            nlls.append(nll)
            groups.setdefault(rank, []).append(nll)
    c = sum(math.exp(-sum(g) / len(g)) for g in groups.values())
    return sum(nlls) / len(nlls) + lam * math.log(c)


def test_compensated_matches_loop_reference() -> None:
    for seed in range(3):
        logits, labels = random_batch(seed, batch=2, length=25, vocab_size=16, dtype=torch.float64)
        logits = (logits / 2).round()  # ties between the target and other tokens
        out = build_loss("compensated", VOCAB, lam=0.7)(logits, labels)
        assert out.loss.item() == pytest.approx(_compensated_by_loops(logits, labels, 0.7), 1e-12)


def test_compensated_gradient_flows_through_q() -> None:
    # d/dlogits of lam·log C is not that of CE: compare to autograd through the loop formula
    logits, labels = random_batch(5, batch=2, length=9, vocab_size=14, dtype=torch.float64)
    logits.requires_grad_(True)
    build_loss("compensated", VOCAB, lam=0.5)(logits, labels).loss.backward()
    got = logits.grad.clone()
    logits.grad = None
    # the same decomposition with autograd on explicit per-group means
    targets = labels[:, 1:].reshape(-1)
    rows = logits[:, :-1].reshape(-1, 14)
    keep = targets >= 0
    nll = F.cross_entropy(rows[keep], targets[keep], reduction="none")
    with torch.no_grad():
        ranks = (rows[keep] > rows[keep].gather(1, targets[keep, None])).sum(1).tolist()
    by_rank: dict[int, list[int]] = {}
    for i, r in enumerate(ranks):
        by_rank.setdefault(r, []).append(i)
    log_q = torch.stack([-nll[idx].mean() for idx in by_rank.values()])
    (nll.mean() + 0.5 * torch.logsumexp(log_q, 0)).backward()
    torch.testing.assert_close(got, logits.grad)


def _reference_loss(name: str, params: dict, logits: torch.Tensor, labels: torch.Tensor):
    """The losses written the plain autograd way, straight from their definitions: slice the
    shift, mask with a boolean index, per-digit terms with Python-side place weights."""
    rows = logits[:, :-1].reshape(-1, logits.shape[-1])
    targets = labels[:, 1:].reshape(-1)
    keep = targets != -100
    nll = F.cross_entropy(rows[keep], targets[keep], reduction="none")
    ce = nll.mean()
    if name == "mixce":
        eta = params["eta"]
        return (eta * nll + (1 - eta) * torch.exp(-nll).detach() * nll).mean()
    is_digit = (targets >= 0) & (targets <= 9)
    z = rows[is_digit][:, :10]  # VOCAB's digit ids are 0..9
    y = targets[is_digit]
    p = z.softmax(-1)
    k = torch.arange(10, dtype=z.dtype)
    dist = (k - y.unsqueeze(1).to(z.dtype)).abs()
    if name == "ntl_mse":
        aux = ((p * k).sum(-1) - y).square().mean()
    elif name == "ntl_was":
        aux = (p * dist).sum(-1).mean()
    elif name == "dist2":
        pd = torch.softmax(-dist.square() / params["tau"], -1)
        aux = (pd * (pd.log() - p.log())).sum(-1).mean()
    else:  # del
        weights = []
        for row in labels[:, 1:].tolist():
            text = "".join("." if t == 10 else str(t) if 0 <= t <= 9 else " " for t in row)
            weights += _reference_place_weights(text, params["decay_base"])
        u = torch.tensor(weights, dtype=z.dtype).reshape(labels.shape[0], -1)
        u = torch.cat([u, torch.zeros_like(u[:, :1])], 1)[:, :-1].reshape(-1)[is_digit]
        onehot = F.one_hot(y, 10).to(z.dtype)
        term = p * F.binary_cross_entropy_with_logits(z, onehot, reduction="none")
        if params["distance"]:
            term = term * dist
        aux = (u.unsqueeze(1) * term).mean()
    return ce + params["alpha"] * aux


def _reference_place_weights(text: str, base: float) -> list[float]:
    """u(t) per character of `text` by reading each number span left to right."""
    out = [0.0] * len(text)
    for start, span in _spans(text):
        if "." in span and not span.startswith("."):
            first = span.index(".")
            for j in range(first):
                out[start + j] = 2.0 * (first - 1 - j + 1)
            for j in range(first + 1, len(span)):
                if span[j] != ".":
                    out[start + j] = base ** -((j - first) + 1)
        else:
            digits = [j for j, ch in enumerate(span) if ch != "."]
            for n, j in enumerate(digits):
                out[start + j] = 2.0 * (len(digits) - n)
    return out


def _spans(text: str) -> list[tuple[int, str]]:
    spans, start = [], None
    for i, ch in enumerate(text + " "):
        if ch.isdigit() or ch == ".":
            start = i if start is None else start
        elif start is not None:
            spans.append((start, text[start:i]))
            start = None
    return spans


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("mixce", {"eta": 0.3}),
        ("ntl_mse", {"alpha": 0.7}),
        ("ntl_was", {"alpha": 0.7}),
        ("dist2", {"alpha": 0.7, "tau": 1.5}),
        ("del", {"alpha": 2.0, "decay_base": 1.3, "distance": False}),
        ("del", {"alpha": 2.0, "decay_base": 1.3, "distance": True}),
    ],
)
def test_value_and_gradient_match_plain_autograd(name: str, params: dict) -> None:
    # digits, dots and other tokens with ignored labels in between: many spans and decimals
    gen = torch.Generator().manual_seed(21)
    labels = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 11, 11, -100])[
        torch.randint(0, 15, (3, 40), generator=gen)
    ]
    logits = torch.randn(3, 40, V, dtype=torch.float64, generator=gen)
    ours = logits.clone().requires_grad_(True)
    out = build_loss(name, VOCAB, **params)(ours, labels)
    out.loss.backward()
    ref = logits.clone().requires_grad_(True)
    expected = _reference_loss(name, params, ref, labels)
    expected.backward()
    torch.testing.assert_close(out.loss, expected, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours.grad, ref.grad, rtol=1e-9, atol=1e-12)
