"""Metric names in the store: the default held-out set each command shows, the evaluation splits
present, and resolving user-given names or glob patterns (`--metric 'eval/*/ce'`)."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from analysis.store import ResultsError

HELD_OUT_LEAVES: tuple[str, ...] = (
    "digit_acc",
    "ce",
    "error_entropy",
    "self_alignment",
    "log_confidence",
    "digit_entropy",
)
"""Teacher-forced metrics the default ablation shows per split: digit accuracy, CE and its
decomposition (ce = error_entropy + self_alignment − log_confidence), digit entropy."""

DECOMPOSITION_LEAVES: tuple[str, ...] = ("ce", "error_entropy", "self_alignment", "log_confidence")
"""The metrics scaling fits are made for."""


def splits(available: Sequence[str]) -> list[str]:
    """Evaluation splits with any `eval/<split>/...` metric; `test` first, then alphabetical."""
    found = {m.split("/")[1] for m in available if m.startswith("eval/") and m.count("/") >= 2}
    return sorted(found, key=lambda s: (s != "test", s))


def benchmarks(available: Sequence[str]) -> list[str]:
    """Generation benchmarks with a `gen/<benchmark>/exact_match` metric, alphabetical."""
    return sorted(
        m.split("/")[1]
        for m in available
        if m.startswith("gen/") and m.count("/") == 2 and m.endswith("/exact_match")
    )


def resolve(patterns: Sequence[str], available: Sequence[str]) -> list[str]:
    """Metric names matching `patterns` (exact names or globs), in pattern order, no repeats.

    A pattern that matches nothing is an error that lists what is available.
    """
    out: list[str] = []
    for pattern in patterns:
        hits = [m for m in available if fnmatch.fnmatchcase(m, pattern)]
        if not hits:
            shown = ", ".join(available[:60]) + (
                f", … ({len(available) - 60} more)" if len(available) > 60 else ""
            )
            raise ResultsError(f"unknown metric {pattern!r}; available: {shown or '(none)'}")
        out.extend(h for h in hits if h not in out)
    return out
