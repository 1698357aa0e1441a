"""Which form of L(N, D) = E + A·N^−α + B·D^−β is fitted: the joint form with every parameter
free (Chinchilla's approach 3), α = β tied (`--tie-exponents`, as the data-constrained and the
over-training studies fit it), some parameters held at given values (`--fix E=1.69`), the
Huber loss's δ (`--huber-delta`), or the form in N alone (B = 0: a line M = E + A·N^−α, or
points without a D axis).

The fitted vector is θ = (e, a, α, b, β) with E = e^e, A = e^a, B = e^b (so E, A, B stay
positive); a form says which of the five are free, and maps the free values to θ and the
gradient (or Jacobian) of θ back to the free values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from records.errors import ResultsError

PARAMS = ("E", "A", "alpha", "B", "beta")
"""The joint form's parameters, in the order of θ and of every array of them."""
SYMBOLS = {"E": "E", "A": "A", "alpha": "α", "B": "B", "beta": "β"}
ALIASES = {"α": "alpha", "β": "beta", "a": "A", "b": "B", "e": "E"}
"""Other spellings --fix accepts (the Greek letters; case-insensitive names)."""
HUBER_DELTA = 1e-3
"""Chinchilla's δ, on natural-log residuals."""
EXPONENT_BOUNDS = (0.0, 5.0)
"""α, β ≥ 0 keep the form falling; above 5 it is a step at the smallest size, not a law."""
LOG_PARAMS = (0, 1, 3)
"""Indices of θ held as logarithms (E, A, B)."""


def parse_fix(texts: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """--fix NAME=VALUE items as (name, value) pairs, names canonical (PARAMS); bad input is a
    ValueError naming the item."""
    out: dict[str, float] = {}
    for text in texts:
        name, sep, raw = text.partition("=")
        if not sep:
            raise ValueError(f"--fix {text!r}: give NAME=VALUE (NAME one of E, A, α, B, β)")
        key = name.strip()
        key = ALIASES.get(key, ALIASES.get(key.lower(), key))
        key = {p.lower(): p for p in PARAMS}.get(key.lower(), key)
        if key not in PARAMS:
            raise ValueError(f"--fix {text!r}: unknown parameter {name!r} (E, A, alpha, B, beta)")
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"--fix {text!r}: {raw!r} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"--fix {text!r}: the value must be finite")
        if key in ("E", "A", "B") and not value > 0:
            raise ValueError(f"--fix {text!r}: {key} must be positive")
        if key in ("alpha", "beta") and not EXPONENT_BOUNDS[0] <= value <= EXPONENT_BOUNDS[1]:
            raise ValueError(f"--fix {text!r}: {key} must lie in {list(EXPONENT_BOUNDS)}")
        if key in out and out[key] != value:
            raise ValueError(f"--fix {key} given twice ({out[key]:g} and {value:g})")
        out[key] = value
    return tuple(out.items())


@dataclass(frozen=True)
class JointForm:
    """One form of the fit (module docstring). `fixed` holds natural-scale values (E = 1.69, not
    its logarithm); `n_only` drops the D term (B = 0)."""

    tie: bool = False
    fixed: tuple[tuple[str, float], ...] = ()
    delta: float = HUBER_DELTA
    n_only: bool = False

    def __post_init__(self) -> None:
        fixed = dict(self.fixed)
        if not self.delta > 0 or not math.isfinite(self.delta):
            raise ResultsError(f"--huber-delta must be a positive number, got {self.delta}")
        if self.tie and "alpha" in fixed and "beta" in fixed and fixed["alpha"] != fixed["beta"]:
            raise ResultsError(
                f"--tie-exponents with --fix alpha={fixed['alpha']:g} and beta="
                f"{fixed['beta']:g}: tied exponents cannot differ"
            )
        if self.n_only and ({"B", "beta"} & set(fixed) or self.tie):
            what = (
                "--tie-exponents" if self.tie else f"--fix {'/'.join({'B', 'beta'} & set(fixed))}"
            )
            raise ResultsError(f"{what}: the points have no D axis, so there is no B or β")
        if len(self.free) == 0:
            raise ResultsError("--fix: every parameter is fixed; nothing is left to fit")

    @property
    def values(self) -> dict[str, float]:
        """The fixed values by name, β given by α when tied."""
        out = dict(self.fixed)
        if self.tie:
            if "beta" in out and "alpha" not in out:
                out["alpha"] = out["beta"]
            if "alpha" in out:
                out["beta"] = out["alpha"]
        if self.n_only:
            out |= {"B": 0.0, "beta": 1.0}
        return out

    @functools.cached_property
    def free(self) -> list[int]:
        """Indices into θ that are fitted (β follows α when tied, so it is not one of them)."""
        held = self.values
        return [j for j, p in enumerate(PARAMS) if p not in held and not (self.tie and p == "beta")]

    @functools.cached_property
    def _template(self) -> np.ndarray:
        """θ (5,) with the held values in place (computed once: the least-squares loop maps
        free values to θ on every evaluation)."""
        out = np.zeros(5)
        for j, p in enumerate(PARAMS):
            if p in self.values:
                v = self.values[p]
                out[j] = (np.log(v) if v > 0 else -np.inf) if j in LOG_PARAMS else v
        return out

    @functools.cached_property
    def _follows(self) -> bool:
        return self.tie and "alpha" not in self.values

    def theta(self, free: np.ndarray) -> np.ndarray:
        """θ (K, 5) from the free values (K, f)."""
        free = np.atleast_2d(np.asarray(free, dtype=np.float64))
        out = np.tile(self._template, (free.shape[0], 1))
        out[:, self.free] = free
        if self._follows:
            out[:, 4] = out[:, 2]
        return out

    def reduce(self, theta: np.ndarray) -> np.ndarray:
        """The free values (K, f) of θ (K, 5)."""
        return np.atleast_2d(theta)[:, self.free]

    def reduce_jacobian(self, jac: np.ndarray) -> np.ndarray:
        """A Jacobian or gradient with respect to θ (..., 5) as one with respect to the free
        values (..., f): β's column adds to α's when tied."""
        jac = np.array(jac, dtype=np.float64, copy=True)
        if self.tie and "alpha" not in self.values:
            jac[..., 2] += jac[..., 4]
        return jac[..., self.free]

    def bounds(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the free values for log values `y`: e at most 1 above the
        largest (E above every value cannot fit a falling form), exponents in EXPONENT_BOUNDS."""
        low_x, high_x = EXPONENT_BOUNDS
        lo = np.array([float(np.min(y)) - 30.0, -np.inf, low_x, -np.inf, low_x])
        hi = np.array([float(np.max(y)) + 1.0, np.inf, high_x, np.inf, high_x])
        return lo[self.free], hi[self.free]

    def label(self) -> str:
        """The form in words, for a table's header."""
        base = "M = E + A·N^−α" if self.n_only else "L(N, D) = E + A·N^−α + B·D^−β"
        held = [f"{SYMBOLS[p]} = {v:g}" for p, v in self.fixed]
        parts = [base]
        if self.tie:
            parts.append("α = β")
        if held:
            parts.append("fixed " + ", ".join(held))
        if self.delta != HUBER_DELTA:
            parts.append(f"Huber δ = {self.delta:g}")
        return "; ".join(parts)

    def line_form(self) -> JointForm:
        """The form of a line M = E + A·x^−α against one axis: δ and a fixed E carry over; the
        exponents and coefficients are the line's own (its exponent is α against N, β against
        D), so a fixed or tied exponent does not."""
        keep = tuple((p, v) for p, v in self.fixed if p == "E")
        return JointForm(fixed=keep, delta=self.delta, n_only=True)
