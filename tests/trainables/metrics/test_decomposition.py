"""CEDecomposition: hand-derived golden values, a slow loop implementation, the exact identity
ce = error_entropy + self_alignment − log_confidence, streaming and the input convention."""

from __future__ import annotations

import math

import pytest
import torch

from trainables.metrics import CEDecomposition
from trainables.metrics.decomposition import ranked_tokens

LOG2 = math.log(2.0)


def slow_decomposition(logits: list[torch.Tensor], labels: list[torch.Tensor]) -> dict[str, float]:
    """Direct implementation with explicit Python loops over tokens and vocabulary."""
    log_probs_by_rank: dict[int, list[float]] = {}
    for batch_logits, batch_labels in zip(logits, labels, strict=True):
        b_size, t_size, v_size = batch_logits.shape
        for b in range(b_size):
            for t in range(t_size - 1):
                y = int(batch_labels[b, t + 1])
                if y == -100:
                    continue
                row = [float(x) for x in batch_logits[b, t]]
                rank = sum(1 for v in range(v_size) if row[v] > row[y])
                top = max(row)
                log_z = top + math.log(sum(math.exp(x - top) for x in row))
                log_probs_by_rank.setdefault(rank, []).append(row[y] - log_z)
    n = sum(len(v) for v in log_probs_by_rank.values())
    p = {e: len(v) / n for e, v in log_probs_by_rank.items()}
    big_q = {e: math.exp(sum(v) / len(v)) for e, v in log_probs_by_rank.items()}
    c = sum(big_q.values())
    q = {e: big_q[e] / c for e in big_q}
    return {
        "ce": -sum(sum(v) for v in log_probs_by_rank.values()) / n,
        "error_entropy": -sum(pe * math.log(pe) for pe in p.values()),
        "self_alignment": sum(p[e] * math.log(p[e] / q[e]) for e in p),
        "log_confidence": math.log(c),
        "n_tokens": float(n),
    }


def test_golden_values_by_hand() -> None:
    # V = 3; logits are log-probabilities, so the softmax returns them exactly.
    # position: probabilities           correct  RBE (strictly above)  P
    #   0       (1/2, 1/4, 1/4)          0        0                     1/2
    #   1       (1/2, 1/4, 1/4)          1        1 (the 1/2; tie ≠ above) 1/4
    #   2       (1/4, 1/2, 1/4)          1        0                     1/2
    #   3       (1/8, 1/8, 3/4)          0        1 (the 3/4; tie ≠ above) 1/8
    probs = torch.tensor(
        [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.125, 0.125, 0.75], [1, 1, 1]],
        dtype=torch.float64,
    )
    logits = probs.log().unsqueeze(0)  # (1, 5, 3); position 4 predicts nothing
    labels = torch.tensor([[7, 0, 1, 1, 0]])  # label 0 is the input's own token: never scored
    dec = CEDecomposition()
    dec.update(logits, labels)
    got = dec.compute()
    # CE = −(1/4)(log 1/2 + log 1/4 + log 1/2 + log 1/8) = (1 + 2 + 1 + 3)/4 · log 2
    ce = 7 / 4 * LOG2
    # p_0 = p_1 = 1/2, so EE = log 2.
    ee = LOG2
    # Q_0 = geomean(1/2, 1/2) = 2^-1; Q_1 = geomean(1/4, 1/8) = 2^-2.5; C = 2^-1 + 2^-2.5.
    log_c = math.log(2**-1 + 2**-2.5)
    # SA = ½ log(½ / (2^-1/C)) + ½ log(½ / (2^-2.5/C)) = log C + ½ · 1.5 · log 2
    sa = log_c + 0.75 * LOG2
    assert got["ce"] == pytest.approx(ce, abs=1e-12)
    assert got["error_entropy"] == pytest.approx(ee, abs=1e-12)
    assert got["log_confidence"] == pytest.approx(log_c, abs=1e-12)
    assert got["self_alignment"] == pytest.approx(sa, abs=1e-12)
    assert got["n_tokens"] == 4.0


def test_single_rank_has_no_error_entropy() -> None:
    # Every token has the correct token on top (RBE = 0): p = (1), so EE = SA = 0 and
    # CE = −log Q_0 = −log C.
    logits = torch.tensor([[[2.0, 0.0], [0.0, 3.0], [0.0, 0.0]]])  # (1, 3, 2)
    labels = torch.tensor([[0, 0, 1]])
    dec = CEDecomposition()
    dec.update(logits, labels)
    got = dec.compute()
    # log P: 2 − log(e² + 1) and 3 − log(e³ + 1)
    mean_log_p = (2 - math.log(math.exp(2) + 1) + 3 - math.log(math.exp(3) + 1)) / 2
    assert got["error_entropy"] == 0.0
    assert got["self_alignment"] == pytest.approx(0.0, abs=1e-15)
    assert got["ce"] == pytest.approx(-mean_log_p, abs=1e-12)
    assert got["log_confidence"] == pytest.approx(mean_log_p, abs=1e-12)


def _random_batches(
    shapes: list[tuple[int, int]], vocab: int, seed: int, ties: bool = False
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    logits, labels = [], []
    for b, t in shapes:
        if ties:  # few distinct values: many ties with the correct token
            lg = torch.randint(-2, 3, (b, t, vocab), generator=gen).float()
        else:
            lg = torch.randn(b, t, vocab, generator=gen) * 3
        lb = torch.randint(0, vocab, (b, t), generator=gen)
        lb[torch.rand(b, t, generator=gen) < 0.2] = -100
        logits.append(lg)
        labels.append(lb)
    return logits, labels


@pytest.mark.parametrize("ties", [False, True])
def test_matches_slow_implementation_over_several_updates(ties: bool) -> None:
    shapes = [(2, 9), (3, 4), (1, 13), (4, 2)]
    logits, labels = _random_batches(shapes, vocab=17, seed=3, ties=ties)
    dec = CEDecomposition()
    for lg, lb in zip(logits, labels, strict=True):
        dec.update(lg, lb)
    got, want = dec.compute(), slow_decomposition(logits, labels)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-9), key


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identity_holds_to_float64_precision(seed: int) -> None:
    shapes = [(3, 11), (1, 40), (5, 3), (2, 25)]
    logits, labels = _random_batches(shapes, vocab=50, seed=seed)
    dec = CEDecomposition()
    for lg, lb in zip(logits, labels, strict=True):
        dec.update(lg, lb)
    r = dec.compute()
    reconstructed = r["error_entropy"] + r["self_alignment"] - r["log_confidence"]
    assert abs(r["ce"] - reconstructed) <= 1e-9
    assert r["error_entropy"] > 0 and r["self_alignment"] >= 0


def test_streaming_equals_one_big_batch() -> None:
    logits, labels = _random_batches([(6, 10)], vocab=20, seed=5)
    whole = CEDecomposition()
    whole.update(logits[0], labels[0])
    parts = CEDecomposition()
    for rows in (slice(0, 1), slice(1, 4), slice(4, 6)):
        parts.update(logits[0][rows], labels[0][rows])
    for key, value in whole.compute().items():
        assert parts.compute()[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_memory_is_per_rank_not_per_token() -> None:
    dec = CEDecomposition()
    for seed in range(4):
        logits, labels = _random_batches([(4, 16)], vocab=13, seed=seed)
        dec.update(logits[0], labels[0])
    state = dec.state()
    assert state is not None
    assert state.shape == (2, 13) and state.dtype == torch.float64
    assert float(state[0].sum()) == dec.compute()["n_tokens"]


def test_low_precision_logits_use_their_own_ranking() -> None:
    logits, labels = _random_batches([(2, 12)], vocab=9, seed=7)
    half = logits[0].to(torch.bfloat16)
    dec = CEDecomposition()
    dec.update(half, labels[0])
    # The slow version on the bf16 values (exactly representable in float64) must agree.
    want = slow_decomposition([half.double()], labels)
    for key, value in want.items():
        assert dec.compute()[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_shift_convention_position_t_predicts_label_t_plus_1() -> None:
    # Position 0 is confident in token 1, position 1 in token 0. With labels [x, 1, 0] both
    # predictions are right (RBE 0); unshifted they would both be wrong.
    logits = torch.tensor([[[0.0, 5.0], [5.0, 0.0], [0.0, 0.0]]])
    dec = CEDecomposition()
    dec.update(logits, torch.tensor([[0, 1, 0]]))
    assert dec.state()[0].tolist() == [2.0, 0.0]  # both tokens at rank error 0


def test_no_tokens_gives_nan() -> None:
    dec = CEDecomposition()
    assert math.isnan(dec.compute()["ce"])
    dec.update(torch.zeros(1, 3, 4), torch.full((1, 3), -100))
    got = dec.compute()
    assert got["n_tokens"] == 0.0 and math.isnan(got["error_entropy"])


def test_all_reduce_without_distributed_is_a_no_op() -> None:
    logits, labels = _random_batches([(2, 6)], vocab=5, seed=1)
    dec = CEDecomposition()
    dec.update(logits[0], labels[0])
    before = dec.compute()
    dec.all_reduce()
    assert dec.compute() == before


def test_bad_input_raises_clear_errors() -> None:
    dec = CEDecomposition()
    with pytest.raises(ValueError, match=r"logits must be \(B, T, V\)"):
        dec.update(torch.zeros(3, 4), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="labels must be"):
        dec.update(torch.zeros(2, 3, 4), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="integer tensor"):
        dec.update(torch.zeros(2, 3, 4), torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"labels must be -100 or in \[0, 4\)"):
        dec.update(torch.zeros(1, 3, 4), torch.tensor([[0, 4, 1]]))
    dec.update(torch.zeros(1, 3, 4), torch.tensor([[0, 3, 1]]))
    with pytest.raises(ValueError, match="vocabulary size 5"):
        dec.update(torch.zeros(1, 3, 5), torch.tensor([[0, 3, 1]]))
    with pytest.raises(ValueError, match="vocab_size"):
        CEDecomposition(vocab_size=0)


def test_row_chunking_gives_the_same_sums(monkeypatch: pytest.MonkeyPatch) -> None:
    # The float64 upcast runs over row chunks of _UPCAST_ELEMENTS // V rows; with a tiny budget
    # (3 rows of V = 17) every batch spans several chunks, including a ragged last one.
    import trainables.metrics.decomposition as decomposition

    monkeypatch.setattr(decomposition, "_UPCAST_ELEMENTS", 3 * 17)
    logits, labels = _random_batches([(2, 9), (3, 5)], vocab=17, seed=11)
    dec = CEDecomposition()
    for lg, lb in zip(logits, labels, strict=True):
        dec.update(lg, lb)
    for key, value in slow_decomposition(logits, labels).items():
        assert dec.compute()[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key


def test_ranked_pairs_of_any_subset_decompose_like_their_logits() -> None:
    # The per-token (rank error, log P) pairs of ranked_tokens, added back with add_ranked, give
    # what update gives for the same tokens; the first k pairs give the first k tokens' values
    # (the slow loop implementation on those tokens alone is the reference).
    torch.manual_seed(3)
    logits = torch.randn(1, 41, 7, dtype=torch.float64)  # (1, T, V): 40 scored tokens
    labels = torch.randint(0, 7, (1, 41))
    rank, log_p = ranked_tokens(logits[0, :-1], labels[0, 1:])
    assert rank.dtype == torch.int64 and rank.shape == (40,) and log_p.shape == (40,)
    for k in (1, 9, 40):
        dec = CEDecomposition(vocab_size=7)
        dec.add_ranked(rank[:k], log_p[:k])
        want = slow_decomposition([logits[:, : k + 1]], [labels[:, : k + 1]])
        assert dec.compute() == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_add_ranked_needs_the_vocabulary_and_a_rank_below_it() -> None:
    with pytest.raises(ValueError, match="vocab_size"):
        CEDecomposition().add_ranked(torch.tensor([0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match="not below the vocabulary size 3"):
        CEDecomposition(vocab_size=3).add_ranked(torch.tensor([3]), torch.tensor([-1.0]))
