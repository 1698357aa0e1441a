"""A sequential test of paired seeds: the z-scale design at the seeds' information fractions, its
bounds carried to the t scale at each look's seeds (small_n.py), and what the study claims: the
hypotheses tested and the smallest effect of interest (SESOI, also the equivalence margin).

Hypotheses (docs/sequential.md):

- `superiority`: the one-sided test that the treatment is better than the reference by more than
  0, and its mirror (worse), each at α: the study files' registered "greater" and "less" tests;
- `equivalence`: TOST, both one-sided tests against ±SESOI at α, each against the same bounds;
- `both`: either, whichever a look decides first.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from analysis.sequential.boundaries import Design, group_sequential
from analysis.sequential.small_n import calibrated_bounds, check_seeds, nominal_t

Hypotheses = Literal["superiority", "equivalence", "both"]
HYPOTHESES: tuple[str, ...] = ("superiority", "equivalence", "both")


@dataclass(frozen=True)
class SequentialTest:
    """Everything a look of a paired sequential study is judged by."""

    design: Design
    """The z-scale design at the fractions seeds / max seeds (bounds, spending, drift)."""
    seeds: tuple[int, ...]
    """Paired seeds at each look; the last is the maximum."""
    efficacy_t: tuple[float, ...]
    """Each look's efficacy bound on the t scale (df = seeds − 1), calibrated (small_n.py)."""
    futility_t: tuple[float, ...] | None
    """Each look's non-binding futility bound on the t scale (nominal p), or None."""
    hypotheses: Hypotheses
    sesoi: float
    """The smallest effect of interest, in the metric's units: the equivalence margin, and the
    effect the design is powered for."""

    @property
    def alpha(self) -> float:
        return self.design.alpha

    @property
    def looks(self) -> int:
        return len(self.seeds)

    @property
    def max_seeds(self) -> int:
        return self.seeds[-1]

    def nominal_t(self) -> tuple[float, ...]:
        """The efficacy bounds the plain nominal-p carry-over would give (for comparison)."""
        return tuple(
            nominal_t(c, n - 1) for c, n in zip(self.design.upper, self.seeds, strict=True)
        )


@functools.lru_cache(maxsize=256)
def _cached(
    seeds: tuple[int, ...],
    sesoi: float,
    hypotheses: str,
    alpha: float,
    spending: str,
    power: float,
    futility: bool,
) -> SequentialTest:
    n = check_seeds(seeds)
    design = group_sequential(alpha, n / n[-1], spending, power=power, futility=futility)
    spent = np.diff(design.alpha_spent, prepend=0.0)
    efficacy = tuple(float(t) for t in calibrated_bounds(spent, seeds))
    futility_t = None
    if design.lower is not None:
        # nominal p, never above the look's efficacy bound; the last look's is the efficacy bound
        nominal = [
            min(nominal_t(b, k - 1), e)
            for b, k, e in zip(design.lower, seeds, efficacy, strict=True)
        ]
        futility_t = (*nominal[:-1], efficacy[-1])
    return SequentialTest(design, seeds, efficacy, futility_t, hypotheses, sesoi)  # type: ignore[arg-type]


def sequential_test(
    seeds: Sequence[int],
    *,
    sesoi: float,
    hypotheses: Hypotheses = "both",
    alpha: float = 0.05,
    spending: str = "obrien-fleming",
    power: float = 0.8,
    futility: bool = True,
) -> SequentialTest:
    """The test of a study that looks at `seeds` paired seeds (e.g. (3, 6, 9)), spending the
    one-sided `alpha` by `spending` (`obrien-fleming`, `pocock`, or `none` with one look), with a
    non-binding β-spending futility rule for `power` when `futility`. Calibrating the t bounds
    takes about a second; the same arguments return the same (cached) object."""
    if not sesoi > 0:
        raise ValueError(f"the SESOI must be > 0, got {sesoi}")
    if hypotheses not in HYPOTHESES:
        raise ValueError(f"hypotheses must be one of {', '.join(HYPOTHESES)}, got {hypotheses!r}")
    key = tuple(int(s) for s in seeds)
    return _cached(key, float(sesoi), hypotheses, float(alpha), spending, float(power), futility)


def looks_at(max_seeds: int, looks: int) -> tuple[int, ...]:
    """Seeds at K looks equally spaced up to `max_seeds` (rounded; the first at least 2)."""
    seeds = [max(2, round(max_seeds * (k + 1) / looks)) for k in range(looks)]
    if max_seeds < 2 or any(b <= a for a, b in itertools.pairwise(seeds)):
        raise ValueError(
            f"{looks} looks need at least {looks + 1} paired seeds (2 at the first look, one more "
            f"at each next), got a maximum of {max_seeds}"
        )
    return tuple(seeds)
