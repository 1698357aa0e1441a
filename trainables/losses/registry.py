"""The explicit registry of losses (`LOSSES`: name -> class), `build_loss`, and what is derived
from the losses' parameter models for the rest of the project.

Adding a loss = one file with its class and its parameter model + one line here + its golden
test. The contract test in tests/trainables/losses/test_contract.py runs over every entry, and
everything else (sweep validation, the Optuna space, the trials-table columns, `numsweep
status`, the README's loss table) reads the entry's `Params`.
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
from trainables.losses.params import ParamSpec, param_specs
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
    does not take (naming it and the loss), for a value outside its model's allowed range, and
    for a digit loss without a NumberVocab.
    """
    return loss_class(name)(vocab, **params)


def loss_class(name: str) -> type[TokenLoss]:
    """The registered class of loss `name`; ValueError listing the known ones."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; known losses: {', '.join(LOSSES)}")
    return LOSSES[name]


def loss_params(name: str) -> dict[str, ParamSpec]:
    """The parameters of loss `name`, from its parameter model, in declaration order."""
    return param_specs(name, loss_class(name).Params)


def param_columns() -> dict[str, type]:
    """Every parameter name of every registered loss (float, int or bool), in registry order:
    one trials-table column each, null where a trial's loss does not take it. A name two losses
    share must have one type."""
    columns: dict[str, type] = {}
    for name in LOSSES:
        for param, spec in loss_params(name).items():
            if columns.setdefault(param, spec.kind) is not spec.kind:
                raise TypeError(
                    f"parameter {param!r} is {columns[param].__name__} in one loss and "
                    f"{spec.kind.__name__} in {name!r}: one column needs one type"
                )
    return columns
