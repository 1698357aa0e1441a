"""The planned sizes N of `--at` (multipliers against `--reference` at sizes not trained), as the
scaling command and the report take them: parsed, and checked before anything runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

from analysis.settings_flags import numbers
from records.errors import ResultsError

sizes = numbers("--at", "a number of parameters")
"""--at as parameter counts N; a value that is not a number is bad input."""


def check_planned(compare_at: Sequence[float] | None, reference: str | None) -> None:
    """--at holds positive, finite sizes and goes with --reference (ResultsError naming them)."""
    bad_at = [n for n in compare_at or () if not (n > 0 and math.isfinite(n))]
    if bad_at:
        raise ResultsError(f"--at must be positive, finite sizes N, got {bad_at}")
    if compare_at and reference is None:
        raise ResultsError("--at gives multipliers against --reference: name the reference")
