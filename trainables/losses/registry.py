"""The explicit registry of losses (`LOSSES`: name -> class) and `build_loss`.

Adding a loss = one file with its class + one line here + its test; the contract test in
tests/test_losses.py runs over every entry automatically.
"""

from __future__ import annotations

from typing import Any

from trainables.losses.compensated import CompensatedLoss
from trainables.losses.contract import TokenLoss
from trainables.losses.digit_entropy import DigitEntropyLoss
from trainables.losses.dist2 import Dist2Loss
from trainables.losses.emo import EMOLoss
from trainables.losses.mixce import MixCELoss
from trainables.losses.mle import MLELoss
from trainables.losses.ntl import NTLMSELoss, NTLWassersteinLoss
from trainables.losses.vocab import NumberVocab

LOSSES: dict[str, type[TokenLoss]] = {
    "mle": MLELoss,
    "mixce": MixCELoss,
    "emo": EMOLoss,
    "ntl_mse": NTLMSELoss,
    "ntl_was": NTLWassersteinLoss,
    "dist2": Dist2Loss,
    "del": DigitEntropyLoss,
    "compensated": CompensatedLoss,
}


def build_loss(name: str, vocab: NumberVocab | None = None, **params: Any) -> TokenLoss:
    """Build the loss `name` with hyper-parameters `params` (defaults for the others).

    Raises ValueError for an unknown name (listing the known ones), for a parameter the loss
    does not take (naming it and the loss), for a value out of range, and for a digit loss
    without a NumberVocab.
    """
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; known losses: {', '.join(LOSSES)}")
    return LOSSES[name](vocab, **params)
