"""Loss hyper-parameters: each loss declares its own once, as a pydantic model in its file.

    class DigitEntropyParams(LossParams):
        alpha: float = Field(0.01, ge=0)
        \"\"\"weight of the digit term\"\"\"

A field is a float, int or bool; its default, its allowed interval (`Field(ge=, gt=, le=, lt=)`)
and its one-line docstring are the whole contract. Everything else is derived from the model:
the loss's own validation (`validate_params`), the checks of a sweep file's grid values and
search ranges (`check_value`, `check_range`), Optuna's distributions, the trials-table columns,
`numsweep status` and the README's loss table (`param_specs`).

Parameter names are qualified by their loss where they meet other losses' (`del.alpha`): each
loss's alpha is its own parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import annotated_types
from pydantic import BaseModel, ConfigDict, ValidationError


class LossParams(BaseModel):
    """Base of every loss's parameter model: extra keys forbidden, types strict (no "0.1" for a
    float, no 1 for a bool), floats finite, field docstrings kept as descriptions."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )


class ParamError(ValueError):
    """A loss parameter (value or range) outside what its model allows; names loss and field."""


@dataclass(frozen=True)
class ParamSpec:
    """One field of a parameter model, as the rest of the project reads it."""

    loss: str
    name: str
    kind: type  # float, int or bool
    default: float | int | bool
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    @property
    def qualified(self) -> str:
        """`<loss>.<name>`: the parameter's name in Optuna and in error messages."""
        return f"{self.loss}.{self.name}"

    @property
    def is_numeric(self) -> bool:
        return self.kind is not bool

    @property
    def allowed(self) -> str:
        """The allowed values in interval notation (`[0, inf)`, `(0, 1)`), or `true or false`."""
        if not self.is_numeric:
            return "true or false"
        low = "-inf" if self.low is None else _number(self.low)
        high = "inf" if self.high is None else _number(self.high)
        left = "(" if self.low is None or self.low_open else "["
        right = ")" if self.high is None or self.high_open else "]"
        return f"{left}{low}, {high}{right}" + (" (integers)" if self.kind is int else "")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def param_specs(loss: str, model: type[LossParams]) -> dict[str, ParamSpec]:
    """The fields of `model` (the parameters of loss `loss`), in declaration order."""
    specs = {}
    for name, field in model.model_fields.items():
        kind = field.annotation
        if kind not in (float, int, bool):
            raise TypeError(f"{loss}.{name}: loss parameters are float, int or bool, got {kind}")
        bounds: dict[str, Any] = {}
        for rule in field.metadata:
            if isinstance(rule, annotated_types.Ge):
                bounds.update(low=float(rule.ge), low_open=False)
            elif isinstance(rule, annotated_types.Gt):
                bounds.update(low=float(rule.gt), low_open=True)
            elif isinstance(rule, annotated_types.Le):
                bounds.update(high=float(rule.le), high_open=False)
            elif isinstance(rule, annotated_types.Lt):
                bounds.update(high=float(rule.lt), high_open=True)
        specs[name] = ParamSpec(
            loss=loss,
            name=name,
            kind=kind,
            default=field.get_default(),
            doc=(field.description or "").strip(),
            **bounds,
        )
    return specs


def validate_params(loss: str, model: type[LossParams], params: Mapping[str, Any]) -> LossParams:
    """`params` as an instance of `model` (defaults filled in); ParamError names the loss and the
    parameter: an unknown name (listing the known ones) or a value outside the allowed set."""
    specs = param_specs(loss, model)
    unknown = sorted(set(params) - set(specs))
    if unknown:
        takes = ", ".join(specs) or "no parameters"
        raise ParamError(
            f"loss {loss!r} does not take parameter(s) {', '.join(map(repr, unknown))} "
            f"(it takes: {takes})"
        )
    try:
        return model.model_validate(dict(params))
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0])
        spec = specs[name]
        raise ParamError(
            f"{spec.qualified} allows {spec.allowed}; got {params[name]!r} ({first['msg']})"
        ) from None


def check_value(loss: str, model: type[LossParams], name: str, value: Any) -> Any:
    """One parameter's value, validated by the loss's model (the value as the model stores it)."""
    return getattr(validate_params(loss, model, {name: value}), name)


def check_range(loss: str, model: type[LossParams], name: str, low: float, high: float) -> None:
    """A search range [low, high] for a numeric parameter: both ends must be allowed values (the
    allowed sets are intervals, so then every value between is too). ParamError otherwise."""
    spec = param_specs(loss, model).get(name)
    if spec is None:
        raise ParamError(f"loss {loss!r} does not take {name!r}")
    if not spec.is_numeric:
        raise ParamError(f"{spec.qualified} is a flag (true or false): it has no search range")
    if spec.kind is int and not all(float(end).is_integer() for end in (low, high)):
        raise ParamError(f"{spec.qualified} takes integers; give integer bounds")
    for end in (low, high):
        try:
            model.model_validate({name: int(end) if spec.kind is int else end})
        except ValidationError:
            raise ParamError(
                f"{spec.qualified} allows {spec.allowed}; the range [{low:g}, {high:g}] leaves it"
            ) from None
