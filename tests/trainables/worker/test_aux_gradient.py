"""The manipulation check (trainables/worker/aux_gradient.py): a known loss mix gives the ratio,
cosine, turn and sign flips derived by hand; the check agrees with a separate computation by
two plain backward passes on a real model; micro-batches add up to their global batch; nothing
of the training state is touched. (That a trial reports it, at ZeRO 0, 2 and 3, one worker or
two, without changing the training: tests/trainables/worker/test_training.py.)"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from records import metric_names as names
from trainables.losses import NumberVocab, build_loss
from trainables.worker.aux_gradient import GradientSplit, aux_gradient_metrics, gradient_split

VOCAB = NumberVocab(digit_ids=list(range(10)), dot_id=10)
V = 12  # ids 0..9 the digits, 10 '.', 11 another token


class BiasOnly(torch.nn.Module):
    """logits[b, t] = bias (V,) at every position: the one model whose gradients a hand
    derivation gives in a line."""

    def __init__(self, bias: torch.Tensor) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(bias.clone())

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> SimpleNamespace:
        return SimpleNamespace(logits=self.bias.expand(*input_ids.shape, V))


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def _expected(g_ce: np.ndarray, g_aux: np.ndarray) -> dict[str, float]:
    """The four metrics from their definitions, in numpy."""
    total = g_ce + g_aux
    nonzero = g_ce != 0
    cos_turn = g_ce @ total / (np.linalg.norm(g_ce) * np.linalg.norm(total))
    return {
        names.AUX_GRAD_RATIO: np.linalg.norm(g_aux) / np.linalg.norm(g_ce),
        names.AUX_GRAD_COS: g_ce @ g_aux / (np.linalg.norm(g_ce) * np.linalg.norm(g_aux)),
        names.AUX_GRAD_TURN_DEG: math.degrees(math.acos(min(1.0, cos_turn))),
        names.AUX_GRAD_SIGN_FLIPS: float(
            (np.sign(total[nonzero]) != np.sign(g_ce[nonzero])).mean()
        ),
    }


def test_a_known_loss_mix_gives_the_hand_derived_ratio():
    """ntl_was (α 0.3) on a bias-only model. With q = softmax(b) over the vocabulary and
    p = softmax of the ten digit logits, over the N scored targets y_t and the D digit ones:
        ∇_b CE = (1/N) Σ_t (q − e_{y_t})
        ∇_b α·aux = (α/D) Σ_{digit t} [p_j (|j − y_t| − Σ_k p_k |k − y_t|)]_{j = digit}, 0 elsewhere
    (the NTL-WAS term Σ_k p_k |k − y| and ∂p_k/∂z_j = p_j (δ_jk − p_k))."""
    rng = np.random.default_rng(3)
    bias = rng.normal(0.0, 1.0, V)
    # Targets are labels[1:]; -100 is ignored; 10 ('.') and 11 are scored by CE only.
    labels = [[11, 3, 7, 10, 5, 11, 0], [11, 9, 9, 1, -100, 11, 2]]
    targets = [y for row in labels for y in row[1:] if y != -100]
    digits = [y for y in targets if y < 10]
    alpha = 0.3

    q, p = _softmax(bias), _softmax(bias[:10])
    g_ce = sum(q - np.eye(V)[y] for y in targets) / len(targets)
    k = np.arange(10)
    g_aux = np.zeros(V)
    for y in digits:
        d = np.abs(k - y)
        g_aux[:10] += p * (d - p @ d)
    g_aux *= alpha / len(digits)
    expected = _expected(g_ce, g_aux)

    model = BiasOnly(torch.tensor(bias, dtype=torch.float32))
    ids = torch.tensor(labels).clamp_min(0)
    batch = {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "labels": torch.tensor(labels),
    }
    loss_fn = build_loss("ntl_was", VOCAB, alpha=alpha)
    got = aux_gradient_metrics(model, loss_fn, [batch], None)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key
    assert 0.05 < got[names.AUX_GRAD_RATIO] < 1  # a mix where both halves count
    assert got[names.AUX_GRAD_S] >= 0
    assert model.bias.grad is None  # the check leaves .grad alone


def test_gradient_split_metrics_by_hand():
    # g_ce = (1, 0), g_aux = (0, 1): ratio 1, orthogonal, the sum turned by 45°, no sign flipped
    # (the second coordinate has g_ce = 0, so it is not counted).
    plain = gradient_split([torch.tensor([1.0, 0.0])], [torch.tensor([0.0, 1.0])]).metrics()
    assert plain[names.AUX_GRAD_RATIO] == 1.0 and plain[names.AUX_GRAD_COS] == 0.0
    assert plain[names.AUX_GRAD_TURN_DEG] == pytest.approx(45.0)
    assert plain[names.AUX_GRAD_SIGN_FLIPS] == 0.0
    # g_aux = −2·g_ce: the gradient reverses (180°), every sign flips, cosine −1.
    ce, aux = (
        [torch.tensor([1.0, -2.0]), torch.tensor([[3.0]])],
        [
            torch.tensor([-2.0, 4.0]),
            torch.tensor([[-6.0]]),
        ],
    )
    reversed_ = gradient_split(ce, aux).metrics()
    assert reversed_[names.AUX_GRAD_RATIO] == pytest.approx(2.0)
    assert reversed_[names.AUX_GRAD_COS] == pytest.approx(-1.0)
    assert reversed_[names.AUX_GRAD_TURN_DEG] == pytest.approx(180.0)
    assert reversed_[names.AUX_GRAD_SIGN_FLIPS] == 1.0
    # A tiny turn keeps its digits: g_aux = 1e-6 across g_ce gives atan(1e-6), 5.73e-5°.
    tiny = gradient_split([torch.tensor([1.0, 0.0])], [torch.tensor([0.0, 1e-6])]).metrics()
    assert tiny[names.AUX_GRAD_TURN_DEG] == pytest.approx(math.degrees(math.atan(1e-6)), rel=1e-6)
    # No CE gradient: nothing to compare with.
    empty = GradientSplit(0.0, 1.0, 0.0, 0.0, 0.0).metrics()
    assert all(math.isnan(v) for v in empty.values())


def _tiny_model_and_batch(seed: int = 0):
    from trainables.models.presets import build_model

    model = build_model("tiny", 300, seed, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 300, (4, 20), generator=generator)
    ids[:, 8:14] = torch.randint(20, 30, (4, 6), generator=generator)  # digits: ids 20..29
    labels = ids.clone()
    labels[:, :6] = -100  # the prompt
    return model, {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


@pytest.mark.parametrize(
    ("loss", "params"), [("del", {"alpha": 0.2}), ("compensated", {"lam": 0.5})]
)
def test_the_check_agrees_with_two_plain_backward_passes(loss, params):
    """On the tiny LLaMA preset: g_aux = ∇(loss) − ∇(mle), each by its own .backward(), against
    the check's two autograd.grad halves of one forward."""
    model, batch = _tiny_model_and_batch()
    vocab = NumberVocab(digit_ids=list(range(20, 30)), dot_id=None)
    loss_fn = build_loss(loss, vocab, **params)

    def grads(fn) -> torch.Tensor:
        model.zero_grad()
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        fn(logits, batch["labels"]).loss.backward()
        return torch.cat([p.grad.reshape(-1) for p in model.parameters()]).double()

    g_ce = grads(build_loss("mle", vocab))
    g_aux = grads(loss_fn) - g_ce
    model.zero_grad(set_to_none=True)
    expected = _expected(g_ce.numpy(), g_aux.numpy())
    got = aux_gradient_metrics(model, loss_fn, [batch], None)
    for key in (names.AUX_GRAD_RATIO, names.AUX_GRAD_COS, names.AUX_GRAD_TURN_DEG):
        assert got[key] == pytest.approx(expected[key], rel=1e-3), key
    # sign flips: coordinates near 0 may round either way in the difference of two backwards
    assert got[names.AUX_GRAD_SIGN_FLIPS] == pytest.approx(
        expected[names.AUX_GRAD_SIGN_FLIPS], abs=1e-3
    )
    assert all(p.grad is None for p in model.parameters())


def test_micro_batches_add_up_to_their_global_batch():
    """Two micro-batches under the global normalizer give the metrics of the whole batch."""
    model, batch = _tiny_model_and_batch(1)
    vocab = NumberVocab(digit_ids=list(range(20, 30)), dot_id=None)
    loss_fn = build_loss("del", vocab, alpha=0.05)
    whole = aux_gradient_metrics(model, loss_fn, [batch], None)
    halves = [{k: v[:2] for k, v in batch.items()}, {k: v[2:] for k, v in batch.items()}]
    from trainables.losses import target_counts

    counts = [target_counts(h["labels"], vocab) for h in halves]
    normalizer = {key: float(sum(c[key] for c in counts)) for key in ("n_tokens", "n_digits")}
    split = aux_gradient_metrics(model, loss_fn, halves, normalizer)
    for key in (names.AUX_GRAD_RATIO, names.AUX_GRAD_COS, names.AUX_GRAD_TURN_DEG):
        assert split[key] == pytest.approx(whole[key], rel=1e-4), key


def test_the_check_leaves_the_random_stream_and_dropout_alone():
    """A model with dropout: the check's forward draws masks, but from a forked generator, so the
    next training forward draws what it would have drawn without the check."""
    model, batch = _tiny_model_and_batch(2)
    model.config.attention_dropout = 0.5
    for layer in model.model.layers:
        layer.self_attn.attention_dropout = 0.5
    model.train()
    vocab = NumberVocab(digit_ids=list(range(20, 30)), dot_id=None)
    loss_fn = build_loss("del", vocab)

    def forward() -> torch.Tensor:
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits

    torch.manual_seed(7)
    without = forward()
    torch.manual_seed(7)
    aux_gradient_metrics(model, loss_fn, [batch], None)
    with_check = forward()
    assert torch.equal(with_check, without)
    torch.manual_seed(7)
    assert not torch.equal(forward(), forward())  # dropout is on: masks differ draw to draw


def test_a_loss_without_an_auxiliary_term_is_refused():
    model, batch = _tiny_model_and_batch()
    with pytest.raises(ValueError, match="'mle' has no auxiliary term"):
        aux_gradient_metrics(model, build_loss("mle", None), [batch], None)
