"""The loss registry: names, defaults and parameters, bad configs and bad call inputs named,
and every loss counted by kind.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from tests.trainables.losses.loss_inputs import VOCAB, make, random_batch
from trainables.losses import LOSSES, build_loss, loss_params

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
