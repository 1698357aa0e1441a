"""The loss contract over every registered loss (trainables/losses/contract.py): finite values and
gradients, ignored positions and padding, bf16, the minimum at the correct digit, declared parts
that sum over micro-batches, the global normalizer and the target counts.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.trainables.losses.loss_inputs import DISTANCE_LOSSES, VOCAB, V, make, random_batch
from trainables.losses import LOSSES, LossOutput, LossParams, loss_params
from trainables.losses.contract import target_counts


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


def test_every_loss_compiles_to_its_eager_values(loss_name: str) -> None:
    """`train.compile` (on, or `auto` on a GPU) runs every loss through `torch.compile` with a
    global normalizer of 0-dim tensors, as the worker passes it: the whole loss, its custom
    autograd functions included, must trace (dynamo + AOT autograd; `aot_eager` stops short of
    inductor's code generation, which a GPU does with Triton, not here) and give the eager
    loss, parts and gradient."""
    logits, labels = random_batch(13)
    counts = target_counts(labels, VOCAB)
    normalizer = {k: v.float() for k, v in counts.items()}  # tensors, not Python numbers
    results = []
    for loss_fn in (make(loss_name), torch.compile(make(loss_name), backend="aot_eager")):
        leaf = logits.clone().requires_grad_(True)
        out = loss_fn(leaf, labels, normalizer)
        out.loss.backward()
        results.append((out, leaf.grad))
    (eager, eager_grad), (compiled, compiled_grad) = results
    torch.testing.assert_close(compiled.loss, eager.loss, rtol=1e-5, atol=1e-6)
    assert compiled.parts.keys() == eager.parts.keys()
    for name, part in eager.parts.items():
        torch.testing.assert_close(compiled.parts[name], part, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(compiled_grad, eager_grad, rtol=1e-5, atol=1e-6)
