"""The ablation's optional paired tests (one-sided, TOST, covariate adjustment, the plateau
check) as one frozen settings object, checked before anything is read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from analysis.option_choices import ALTERNATIVES
from analysis.settings_flags import flag
from records.errors import ResultsError


@dataclass(frozen=True)
class PairedOptions:
    """The ablation's optional tests (command-line flags in brackets); the defaults leave the
    tables exactly as they are without them."""

    alternative: str = field(default="two-sided", metadata=flag(choices=ALTERNATIVES))
    """The paired t-tests' alternative on mean(arm − baseline) (--alternative)."""
    equivalence: float | None = field(default=None, metadata=flag(metavar="SESOI"))
    """SESOI of a TOST per paired test (--equivalence); None: no TOST."""
    adjust_for: str | None = field(default=None, metadata=flag(metavar="METRIC"))
    """Covariate metric of the paired ANCOVA (--adjust-for); None: none."""
    plateau: str | None = field(default=None, metadata=flag(metavar="METRIC", bare=""))
    """Metric of the plateau check (--plateau [METRIC]); "" = the first chosen metric with a
    better direction; None: no check."""
    plateau_last: int = field(default=3, metadata=flag(metavar="K"))
    """Evaluations the plateau slope is fitted over (--plateau-last)."""
    min_slope: float = 0.0
    """Improvement per 1000 steps the slope's interval must exceed to flag (--min-slope)."""

    @property
    def sided(self) -> str:
        if self.alternative == "two-sided":
            return "two-sided"
        return (
            f"one-sided ({'arm > baseline' if self.alternative == 'greater' else 'arm < baseline'})"
        )

    def checked(self) -> PairedOptions:
        """These options, or ResultsError naming the flag that is out of range."""
        if self.alternative not in ALTERNATIVES:
            raise ResultsError(
                f"--alternative must be one of {', '.join(ALTERNATIVES)}, got {self.alternative!r}"
            )
        if self.equivalence is not None and not self.equivalence > 0:
            raise ResultsError(f"--equivalence (SESOI) must be > 0, got {self.equivalence}")
        if self.plateau_last < 2:
            raise ResultsError(f"--plateau-last must be >= 2, got {self.plateau_last}")
        if not math.isfinite(self.min_slope) or self.min_slope < 0:
            raise ResultsError(f"--min-slope must be >= 0, got {self.min_slope}")
        return self
