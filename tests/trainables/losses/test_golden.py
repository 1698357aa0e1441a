"""Golden values by hand for every loss (trainables/losses), on one tiny batch.

Golden values are written as the arithmetic (plain `math`) that produces them.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainables.losses.loss_inputs import V, make
from trainables.losses import LossOutput

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
