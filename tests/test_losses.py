"""Tests for trainables/losses: registry, golden values by hand, identities and the contract.

Tiny vocabulary throughout: ids 0..9 are the digits '0'..'9', 10 is '.', 11.. other tokens.
Golden values are written as the arithmetic (plain `math`) that produces them.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from trainables.losses import LOSSES, LossOutput, LossParams, NumberVocab, build_loss, loss_params
from trainables.losses.contract import target_counts
from trainables.losses.cross_entropy import token_nll

VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=10)
V = 12
DISTANCE_LOSSES = [
    ("ntl_mse", {}),
    ("ntl_was", {}),
    # p_d(k) ∝ exp(−(k − y)² / tau) is strictly decreasing in |k − y| for any tau, but with
    # tau = 1 it falls below fp32 resolution from |k − y| = 4 on; tau = 10 keeps it visible.
    ("dist2", {"tau": 10.0}),
    ("del", {"distance": True}),
]


def emo_embedding(vocab_size: int = V) -> torch.Tensor:
    """(V, 2): token i at angle i·π/12, scaled by (i + 1) so that row normalisation matters."""
    return torch.tensor(
        [
            [(i + 1) * math.cos(i * math.pi / 12), (i + 1) * math.sin(i * math.pi / 12)]
            for i in range(vocab_size)
        ]
    )


def make(name: str, vocab_size: int = V, **params: object):
    """build_loss with the inputs a loss requires (EMO's cost embedding)."""
    if "cost_embedding" in LOSSES[name].required_inputs:
        params.setdefault("cost_embedding", emo_embedding(vocab_size))
    return build_loss(name, VOCAB, **params)


# --------------------------------------------------------------------------------------
# The golden batch: labels "x 3 . 5" -> targets (3, '.', 5, ignored) after the shift.
#   position 0: target 3,   logits 0 except z3 = 1, z4 = 2
#   position 1: target '.', logits all 0
#   position 2: target 5,   logits 0 except z5 = 2, z11 = 1
#   position 3: predicts nothing (last position); its logits must not matter
# --------------------------------------------------------------------------------------
E = math.e


def golden_batch() -> tuple[torch.Tensor, torch.Tensor]:
    logits = torch.zeros(1, 4, V)
    logits[0, 0, 3], logits[0, 0, 4] = 1.0, 2.0
    logits[0, 2, 5], logits[0, 2, 11] = 2.0, 1.0
    logits[0, 3] = torch.arange(V, dtype=torch.float32)  # never scored
    labels = torch.tensor([[11, 3, 10, 5]])
    return logits, labels


# Full-vocabulary log-sum-exps and per-token nll of the golden batch.
LSE0 = math.log(10 + E + E**2)  # ten logits 0, one 1, one 2
LSE2 = math.log(10 + E**2 + E)  # ten logits 0, one 2, one 1
NLL = [LSE0 - 1.0, math.log(12), LSE2 - 2.0]
CE = sum(NLL) / 3
# Softmax over the ten digit logits at the two digit positions.
Z0 = 8 + E + E**2  # digit logits (0, 0, 0, 1, 2, 0, 0, 0, 0, 0)
P0 = [1 / Z0, 1 / Z0, 1 / Z0, E / Z0, E**2 / Z0, 1 / Z0, 1 / Z0, 1 / Z0, 1 / Z0, 1 / Z0]
Z2 = 9 + E**2  # digit logits (0, 0, 0, 0, 0, 2, 0, 0, 0, 0)
P2 = [1 / Z2] * 5 + [E**2 / Z2] + [1 / Z2] * 4
DIGIT_LOGITS0 = [0, 0, 0, 1, 2, 0, 0, 0, 0, 0]
DIGIT_LOGITS2 = [0, 0, 0, 0, 0, 2, 0, 0, 0, 0]


def run(name: str, **params: object) -> LossOutput:
    logits, labels = golden_batch()
    return make(name, **params)(logits, labels)


def close(out: torch.Tensor, expected: float, rel: float = 1e-6) -> None:
    assert out.item() == pytest.approx(expected, rel=rel, abs=1e-7)


def test_golden_mle() -> None:
    out = run("mle")
    close(out.loss, CE)
    close(out.parts["ce"], CE)
    assert int(out.n_tokens) == 3


def test_golden_mixce() -> None:
    eta = 0.3
    per_token = [eta * n + (1 - eta) * math.exp(-n) * n for n in NLL]
    out = run("mixce", eta=eta)
    close(out.loss, sum(per_token) / 3)
    close(out.parts["ce"], CE)


def test_golden_ntl_mse() -> None:
    # expected digit Σ k p_k: digits other than 3, 4 sum to 45 − 7 = 38 (position 0);
    # digits other than 5 sum to 40 (position 2)
    mean0 = (38 + 3 * E + 4 * E**2) / Z0
    mean2 = (40 + 5 * E**2) / Z2
    aux = ((mean0 - 3) ** 2 + (mean2 - 5) ** 2) / 2
    out = run("ntl_mse", alpha=0.3)
    close(out.parts["aux"], aux)
    close(out.loss, CE + 0.3 * aux)
    assert int(out.n_digits) == 2


def test_golden_ntl_was() -> None:
    # Σ_k p_k |k − y|: at position 0 the distances to 3 of k = 0..9 are 3,2,1,0,1,2,3,4,5,6,
    # the digits with logit 0 (all but 3 and 4) add 3+2+1+2+3+4+5+6 = 26, digit 4 adds e²·1;
    # at position 2 the distances to 5 of all k != 5 sum to 5+4+3+2+1+1+2+3+4 = 25
    aux = ((26 + E**2) / Z0 + 25 / Z2) / 2
    out = run("ntl_was", alpha=0.5)
    close(out.parts["aux"], aux)
    close(out.loss, CE + 0.5 * aux)


def test_golden_dist2() -> None:
    tau = 2.0

    def kl(y: int, p: list[float]) -> float:
        w = [math.exp(-((k - y) ** 2) / tau) for k in range(10)]
        pd = [x / sum(w) for x in w]
        return sum(pd[k] * (math.log(pd[k]) - math.log(p[k])) for k in range(10))

    aux = (kl(3, P0) + kl(5, P2)) / 2
    out = run("dist2", alpha=0.1, tau=tau)
    close(out.parts["aux"], aux)
    close(out.loss, CE + 0.1 * aux)


def _bce(z: float, target: int) -> float:
    """BCE(σ(z), target) = log(1 + e^−z) for target 1, log(1 + e^z) for target 0."""
    return math.log1p(math.exp(-z)) if target else math.log1p(math.exp(z))


@pytest.mark.parametrize("distance", [False, True])
def test_golden_del(distance: bool) -> None:
    b = 1.05
    # "3.5": the 3 is units (u = 2·(0 + 1) = 2), the 5 the first decimal (u = b^−2)
    u0, u2 = 2.0, b**-2

    def term(y: int, z: list[int], p: list[float]) -> float:
        return (
            sum(p[k] * _bce(z[k], int(k == y)) * (abs(k - y) if distance else 1) for k in range(10))
            / 10
        )

    # mean over (2 digit positions × 10 digits)
    aux = (u0 * term(3, DIGIT_LOGITS0, P0) + u2 * term(5, DIGIT_LOGITS2, P2)) / 2
    out = run("del", alpha=0.5, decay_base=b, distance=distance)
    close(out.parts["aux"], aux)
    close(out.loss, CE + 0.5 * aux)


def test_golden_emo() -> None:
    # Rows of the cost embedding are at angle i·π/12, so ê_yᵀê_j = cos((y − j)·π/12).
    def q(position_logits: dict[int, float]) -> list[float]:
        w = [math.exp(position_logits.get(j, 0.0)) for j in range(V)]
        return [x / sum(w) for x in w]

    def per_token(y: int, nll: float, probs: list[float]) -> float:
        demd = 1 - sum(probs[j] * math.cos((y - j) * math.pi / 12) for j in range(V))
        return 0.5 * (nll + min(nll / demd, 3.0) * demd)

    tokens = [
        per_token(3, NLL[0], q({3: 1.0, 4: 2.0})),
        per_token(10, NLL[1], q({})),
        per_token(5, NLL[2], q({5: 2.0, 11: 1.0})),
    ]
    out = run("emo")
    close(out.loss, sum(tokens) / 3)
    close(out.parts["ce"], CE)


def test_golden_compensated() -> None:
    lam = 0.25
    # ranks: position 0 (target 3, logit 1) has one token above it (z4 = 2) -> e = 1;
    # positions 1 and 2 have none strictly above -> e = 0
    q0 = math.exp(-(NLL[1] + NLL[2]) / 2)  # geometric mean of q(y) over group e = 0
    q1 = math.exp(-NLL[0])  # group e = 1
    log_c = math.log(q0 + q1)
    out = run("compensated", lam=lam)
    close(out.loss, CE + lam * log_c)
    close(out.parts["log_confidence"], log_c)
    p = [2 / 3, 1 / 3]
    q = [q0 / (q0 + q1), q1 / (q0 + q1)]
    close(out.parts["error_entropy"], -sum(x * math.log(x) for x in p))
    close(out.parts["self_alignment"], sum(p[i] * math.log(p[i] / q[i]) for i in range(2)))


# ----------------------------------------------------------------------------- identities


def random_batch(
    seed: int = 0, batch: int = 3, length: int = 17, vocab_size: int = V, dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random logits and labels with digits, dots, other tokens and ignored (-100) labels."""
    gen = torch.Generator().manual_seed(seed)
    logits = (3 * torch.randn(batch, length, vocab_size, generator=gen)).to(dtype)
    labels = torch.randint(0, vocab_size, (batch, length), generator=gen)
    labels[torch.rand(batch, length, generator=gen) < 0.15] = -100
    return logits, labels


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


# ------------------------------------------------------------------------- the contract


@pytest.fixture(params=sorted(LOSSES))
def loss_name(request: pytest.FixtureRequest) -> str:
    return request.param


def test_contract_finite_scalar_and_gradients(loss_name: str) -> None:
    logits, labels = random_batch(7)
    logits.requires_grad_(True)
    out = make(loss_name)(logits, labels)
    assert isinstance(out, LossOutput)
    assert out.loss.dim() == 0 and torch.isfinite(out.loss)
    assert out.loss.dtype == torch.float32
    assert "ce" in out.parts
    for name, part in out.parts.items():
        assert part.dim() == 0 and not part.requires_grad and torch.isfinite(part), name
    assert int(out.n_tokens) == int((labels[:, 1:] != -100).sum())
    if LOSSES[loss_name].needs_digits:
        assert int(out.n_digits) == int(((labels[:, 1:] >= 0) & (labels[:, 1:] <= 9)).sum())
    out.loss.backward()
    grad = logits.grad
    assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    # positions whose target is ignored (and every row's last position) get no gradient
    ignored = torch.cat(
        [labels[:, 1:] == -100, torch.ones_like(labels[:, :1], dtype=torch.bool)], 1
    )
    assert (grad[ignored] == 0).all()


def test_contract_ignored_positions_change_nothing(loss_name: str) -> None:
    logits, labels = random_batch(8)
    loss_fn = make(loss_name)
    before = loss_fn(logits, labels).loss
    ignored = torch.cat(
        [labels[:, 1:] == -100, torch.ones_like(labels[:, :1], dtype=torch.bool)], 1
    )
    changed = logits.clone()
    changed[ignored] = 50 * torch.randn(int(ignored.sum()), V)
    assert torch.equal(loss_fn(changed, labels).loss, before)


def test_contract_padding_invariant(loss_name: str) -> None:
    logits, labels = random_batch(9)
    loss_fn = make(loss_name)
    before = loss_fn(logits, labels)
    # five padded positions at the end of every row and one all-padding row
    padded_logits = torch.cat([logits, torch.randn(3, 5, V)], 1)
    padded_labels = torch.cat([labels, torch.full((3, 5), -100)], 1)
    padded_logits = torch.cat([padded_logits, torch.randn(1, 22, V)], 0)
    padded_labels = torch.cat([padded_labels, torch.full((1, 22), -100)], 0)
    after = loss_fn(padded_logits, padded_labels)
    torch.testing.assert_close(after.loss, before.loss, rtol=1e-6, atol=1e-7)
    assert int(after.n_tokens) == int(before.n_tokens)


def test_contract_bf16_logits(loss_name: str) -> None:
    logits, labels = random_batch(10)
    loss_fn = make(loss_name)
    full = loss_fn(logits, labels).loss
    low = logits.to(torch.bfloat16).requires_grad_(True)
    out = loss_fn(low, labels)
    assert out.loss.dtype == torch.float32
    # the same value within bf16's rounding of the logits ...
    torch.testing.assert_close(out.loss, full, rtol=2e-2, atol=1e-3)
    # ... and computed in fp32: exactly the loss of the upcast logits
    torch.testing.assert_close(out.loss, loss_fn(low.detach().float(), labels).loss)
    out.loss.backward()
    assert low.grad.dtype == torch.bfloat16 and torch.isfinite(low.grad.float()).all()


def _single_target_loss(name: str, params: dict, target: int, peak: int) -> float:
    """Loss with one scored position (target digit `target`), logit mass on digit `peak`."""
    logits = torch.zeros(1, 2, V)
    logits[0, 0, peak] = 8.0
    labels = torch.tensor([[11, target]])
    return make(name, **params)(logits, labels).loss.item()


@pytest.mark.parametrize("target", [0, 3, 9])
def test_contract_minimum_at_correct_digit(loss_name: str, target: int) -> None:
    losses = [_single_target_loss(loss_name, {}, target, k) for k in range(10)]
    assert min(range(10), key=losses.__getitem__) == target
    assert all(losses[k] > losses[target] for k in range(10) if k != target)


@pytest.mark.parametrize(("name", "params"), DISTANCE_LOSSES)
@pytest.mark.parametrize("target", [0, 3, 9])
def test_distance_losses_grow_with_distance(name: str, params: dict, target: int) -> None:
    losses = [_single_target_loss(name, params, target, k) for k in range(10)]
    for side in (range(target, 10), range(target, -1, -1)):
        along = [losses[k] for k in side]
        assert all(a < b for a, b in itertools.pairwise(along)), (side, along)


def test_contract_covers_every_registered_loss() -> None:
    for name, cls in LOSSES.items():
        assert cls.name == name
        assert issubclass(cls.Params, LossParams)
        assert cls.definition, name  # the README's loss table reads it
        defaults = cls.Params()  # every default is itself valid
        for param, spec in loss_params(name).items():
            assert spec.doc, (name, param)  # a one-line docstring per field
            assert getattr(defaults, param) == spec.default
            if spec.is_numeric:
                assert spec.low is not None or spec.high is not None, (name, param)


def test_every_loss_returns_exactly_its_declared_parts(loss_name: str) -> None:
    logits, labels = random_batch(15)
    out = make(loss_name)(logits, labels)
    assert set(out.parts) == set(LOSSES[loss_name].parts)
    assert out.parts.keys() >= {"ce"}
    assert all(v.dim() == 0 and not v.requires_grad for v in out.parts.values())


def test_parts_are_contributions_that_sum_over_micro_batches(loss_name: str) -> None:
    """Every part (not only ce) of two halves under the global normalizer sums to the step's
    value: the whole batch's part for the additive ones, the token-weighted mean of the halves'
    own values for compensated's (log C is per batch)."""
    logits, labels = random_batch(16, batch=4, length=13)
    loss_fn = make(loss_name)
    halves = [(logits[:2], labels[:2]), (logits[2:], labels[2:])]
    counts = [target_counts(lab, VOCAB) for _, lab in halves]
    normalizer = {key: sum(c[key] for c in counts) for key in ("n_tokens", "n_digits")}
    outs = [loss_fn(lg, lab, normalizer=normalizer) for lg, lab in halves]
    alone = [loss_fn(lg, lab) for lg, lab in halves]
    full = loss_fn(logits, labels)
    shares = [int(c["n_tokens"]) / int(normalizer["n_tokens"]) for c in counts]
    for part in LOSSES[loss_name].parts:
        summed = sum(o.parts[part] for o in outs)
        if loss_name == "compensated" and part != "ce":
            expected = sum(w * a.parts[part] for w, a in zip(shares, alone, strict=True))
        else:
            expected = full.parts[part]
        torch.testing.assert_close(summed, expected, msg=f"{loss_name} part {part}")


# ------------------------------------------------------------- normalizer and counts


def test_global_normalizer_makes_micro_batches_sum_to_the_full_batch(loss_name: str) -> None:
    logits, labels = random_batch(11, batch=4, length=13)
    loss_fn = make(loss_name)
    full_logits = logits.clone().requires_grad_(True)
    full = loss_fn(full_logits, labels)
    full.loss.backward()

    shards = [
        (logits[:2].clone().requires_grad_(True), labels[:2]),
        (logits[2:].clone(), labels[2:]),
    ]
    shards[1][0].requires_grad_(True)
    counts = [target_counts(lab, VOCAB) for _, lab in shards]
    normalizer = {key: sum(c[key] for c in counts) for key in ("n_tokens", "n_digits")}
    outs = [loss_fn(lg, lab, normalizer=normalizer) for lg, lab in shards]
    torch.testing.assert_close(sum(o.parts["ce"] for o in outs), full.parts["ce"])
    assert int(normalizer["n_tokens"]) == int(full.n_tokens)
    if loss_name == "compensated":
        return  # log C is nonlinear in the batch: only its CE part is exact (checked above)
    total = sum(o.loss for o in outs)
    torch.testing.assert_close(total, full.loss)
    total.backward()
    grad = torch.cat([lg.grad for lg, _ in shards])
    torch.testing.assert_close(grad, full_logits.grad)


@pytest.mark.parametrize("name", [n for n, cls in sorted(LOSSES.items()) if cls.needs_digits])
def test_no_digit_position_gives_exact_zero_aux(name: str) -> None:
    logits, labels = random_batch(12)
    labels[(labels >= 0) & (labels <= 9)] = 11
    for normalizer in (None, {"n_tokens": int(target_counts(labels)["n_tokens"]), "n_digits": 0}):
        lg = logits.clone().requires_grad_(True)
        out = make(name)(lg, labels, normalizer=normalizer)
        assert out.parts["aux"].item() == 0.0 and int(out.n_digits) == 0
        out.loss.backward()
        reference = logits.clone().requires_grad_(True)
        make("mle")(reference, labels, normalizer=normalizer).loss.backward()
        torch.testing.assert_close(lg.grad, reference.grad, rtol=0, atol=0)


def test_all_ignored_batch_gives_zero_loss(loss_name: str) -> None:
    logits = torch.randn(2, 5, V, requires_grad=True)
    labels = torch.full((2, 5), -100)
    out = make(loss_name)(logits, labels)
    assert out.loss.item() == 0.0
    out.loss.backward()
    assert (logits.grad == 0).all()


def test_target_counts() -> None:
    labels = torch.tensor([[5, 1, 10, 11, -100, 2], [7, -100, 3, 4, 11, 11]])
    # shifted targets: (1, ., x, ign, 2, ign) and (ign, 3, 4, x, x, ign)
    counts = target_counts(labels, VOCAB)
    assert int(counts["n_tokens"]) == 4 + 4
    assert int(counts["n_digits"]) == 2 + 2
    assert set(target_counts(labels)) == {"n_tokens"}


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


# -------------------------------------------------------------- registry and bad input


def test_registry_names_and_defaults() -> None:
    assert set(LOSSES) == {
        "mle",
        "mixce",
        "emo",
        "ntl_mse",
        "ntl_was",
        "dist2",
        "del",
        "compensated",
    }
    defaults = {name: {k: s.default for k, s in loss_params(name).items()} for name in LOSSES}
    assert defaults == {
        "mle": {},
        "mixce": {"eta": 0.5},
        "emo": {},
        "ntl_mse": {"alpha": 0.3},
        "ntl_was": {"alpha": 0.3},
        "dist2": {"alpha": 0.1, "tau": 1.0},
        "del": {"alpha": 0.01, "decay_base": 1.02, "distance": False},
        "compensated": {"lam": 0.5},
    }
    digit_losses = {name for name, cls in LOSSES.items() if cls.needs_digits}
    assert digit_losses == {"ntl_mse", "ntl_was", "dist2", "del"}
    assert LOSSES["emo"].required_inputs == ("cost_embedding",)


def test_build_loss_uses_given_parameters() -> None:
    loss = build_loss("del", VOCAB, alpha=0.2, decay_base=1.5, distance=True)
    assert loss.params.model_dump() == {"alpha": 0.2, "decay_base": 1.5, "distance": True}
    assert build_loss("dist2", VOCAB, tau=3).params.model_dump() == {"alpha": 0.1, "tau": 3.0}


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("nope", {}, r"unknown loss 'nope'; known losses: mle, mixce"),
        ("mle", {"alpha": 0.1}, r"loss 'mle' does not take parameter\(s\) 'alpha'"),
        ("del", {"eta": 0.5}, r"loss 'del' does not take parameter\(s\) 'eta'.*alpha"),
        ("mixce", {"eta": 1.5}, r"mixce.eta allows \[0, 1\]; got 1.5"),
        ("mixce", {"eta": -0.1}, r"mixce.eta allows \[0, 1\]; got -0.1"),
        ("compensated", {"lam": 1.0}, r"compensated.lam allows \(0, 1\); got 1.0"),
        ("compensated", {"lam": 0.0}, r"compensated.lam allows \(0, 1\); got 0.0"),
        ("ntl_was", {"alpha": -1}, r"ntl_was.alpha allows \[0, inf\); got -1"),
        ("del", {"decay_base": 0}, r"del.decay_base allows \(0, inf\); got 0"),
        ("dist2", {"tau": 0.0}, r"dist2.tau allows \(0, inf\); got 0.0"),
        ("dist2", {"tau": float("nan")}, r"dist2.tau allows .*got nan.*finite number"),
        ("del", {"distance": 1}, r"del.distance allows true or false; got 1"),
        ("del", {"alpha": "0.1"}, r"del.alpha allows \[0, inf\); got '0.1'.*valid number"),
        ("emo", {}, r"loss 'emo' requires 'cost_embedding'"),
        ("emo", {"cost_embedding": [1.0]}, r"cost_embedding must be a \(V, d\) tensor"),
    ],
)
def test_build_loss_rejects_bad_config(name: str, params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_loss(name, VOCAB, **params)


def test_digit_loss_needs_a_vocab() -> None:
    with pytest.raises(ValueError, match="loss 'del' needs digit tokens"):
        build_loss("del")
    assert build_loss("mle").vocab is None  # a non-digit loss does not


def test_bad_call_inputs() -> None:
    logits, labels = random_batch()
    loss = build_loss("ntl_was", VOCAB)
    with pytest.raises(TypeError, match="labels must be a LongTensor"):
        loss(logits, labels.float())
    with pytest.raises(TypeError, match="logits must be a float tensor"):
        loss(labels, labels)
    with pytest.raises(ValueError, match="expected logits"):
        loss(logits[:, :-1], labels)
    with pytest.raises(ValueError, match="outside the logits' vocabulary of size 8"):
        loss(logits[..., :8], labels)
    with pytest.raises(ValueError, match="unknown normalizer key"):
        loss(logits, labels, normalizer={"n_tokens": 3, "tokens": 3})
    with pytest.raises(ValueError, match="normalizer lacks 'n_digits'"):
        loss(logits, labels, normalizer={"n_tokens": 3})
    with pytest.raises(ValueError, match="cost_embedding has 12 rows"):
        make("emo")(torch.randn(1, 3, 20), torch.zeros(1, 3, dtype=torch.long))


def test_losses_counted_by_kind() -> None:
    # one parametrised contract covers all: a registered loss is never silently skipped
    kinds = Counter(cls.needs_digits for cls in LOSSES.values())
    assert kinds[True] == 4 and kinds[False] == 4


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
