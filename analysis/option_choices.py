"""The values the analysis options take (one source for the commands, their validation and the
command line's choices); nothing heavy is imported here, so `--help` stays fast."""

from __future__ import annotations

from typing import Literal

Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[str, ...] = ("holm", "bh", "none")
"""holm: Holm's step-down (family-wise error rate); bh: Benjamini–Hochberg (false discovery
rate); none: raw p-values."""

CORRECTION_FAMILIES: tuple[str, ...] = ("table", "metric", "all")
"""What one multiple-comparison correction counts as a family: every paired test of one table
(panel), the tests of one metric column (every arm against the baseline), or every test the
command makes."""

AXES: tuple[str, ...] = ("N", "D", "C")
"""Scaling axes: parameters N, tokens seen D, compute C ≈ 6·N·D."""

AGGREGATES: tuple[str, ...] = ("size", "trial")
"""Scaling points: per-size means over seeds, or every trial."""

LR_MODES: tuple[str, ...] = ("best", "pool")
"""When the learning rate varies within a scaling fit: per size the best lr's trials, or all."""

ALTERNATIVES: tuple[str, ...] = ("two-sided", "greater", "less")
"""The paired tests' alternative hypothesis on mean(arm − baseline) (scipy.stats.ttest_rel's)."""
