"""Study 4's scored-token curves (studies/scaling_code/scored_tokens.py): the decomposition at
n scored tokens, by prefix and by subsample, on hand-made ranks whose entropies are known."""

from __future__ import annotations

import math

import pytest
import torch

from tests.studies.study_tables import study_tables

S = study_tables("scaling_code", "scored_tokens")


def test_decompose_matches_a_hand_derivation():
    # Ranks 0, 0, 1, 1 with P(target) 1/2, 1/2, 1/4, 1/4: p_e = (1/2, 1/2), so EE = log 2;
    # Q_0 = 1/2, Q_1 = 1/4, C = 3/4, q = (2/3, 1/3); SA = KL(p || q) = ½ log(3/4) + ½ log(3/2);
    # CE = mean −log P = (2 log 2 + 2 log 4) / 4 = 1.5 log 2; and CE = EE + SA − log C.
    rank = torch.tensor([0, 0, 1, 1])
    log_p = torch.log(torch.tensor([0.5, 0.5, 0.25, 0.25]))
    values = S.decompose(rank, log_p, vocab=8)
    assert values["ce"] == pytest.approx(1.5 * math.log(2))
    assert values["error_entropy"] == pytest.approx(math.log(2))
    assert values["self_alignment"] == pytest.approx(0.5 * math.log(0.75) + 0.5 * math.log(1.5))
    assert values["log_confidence"] == pytest.approx(math.log(0.75))
    assert values["ranks_seen"] == 2


def test_curves_grow_the_plug_in_entropy_with_the_tokens_scored():
    # 1000 tokens whose ranks are drawn from a geometric law (many rare ranks): the prefix and
    # subsample rows come at 128, 256, 512 and all 1000 tokens; at all tokens both are the same
    # tokens; the subsample's error entropy rises with n (the plug-in's bias shrinks) while its
    # CE, an unbiased mean, stays put.
    torch.manual_seed(0)
    rank = torch.distributions.Geometric(probs=0.2).sample((1000,)).long()
    log_p = -(1.0 + torch.rand(1000))
    rows = S.curves(rank, log_p, vocab=256)
    assert [r["n"] for r in rows] == [128, 256, 512, 1000]
    assert rows[-1]["prefix"] == pytest.approx(rows[-1]["subsample"])
    ee = [r["subsample"]["error_entropy"] for r in rows]
    assert ee == sorted(ee) and ee[-1] - ee[0] > 0.05
    ce = [r["subsample"]["ce"] for r in rows]
    assert max(ce) - min(ce) < 0.02
