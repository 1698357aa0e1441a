"""The ablation's readable default: a few headline metrics per evaluation split, and the panels
(one table each) a set of metrics is laid out in, with short column names inside a panel.

A panel is an evaluation split together with the generation benchmark drawn from it (`test` with
`gen/mathgen` or `gen/held_out`, `extra` with `gen/mathgen_extra`); other benchmarks and
`gen/macc` form the `generation` panel, anything else (train/, perf/) the `other` panel.
"""

from __future__ import annotations

from collections.abc import Sequence

from records.metric_names import HEADLINE_GEN_LEAVES, HEADLINE_LEAVES, benchmarks, splits

SPLIT_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "test": ("mathgen", "held_out"),
    "extra": ("mathgen_extra",),
}
"""Generation benchmarks whose problems come from an evaluation split."""
PANEL_TITLES: dict[str, str] = {"test": "interpolation", "extra": "extrapolation"}


def panel_of(metric: str) -> str:
    """The panel a metric is shown in: its split, `generation`, or `other`."""
    parts = metric.split("/")
    if parts[0] == "eval" and len(parts) >= 3:
        return parts[1]
    if parts[0] == "gen" and len(parts) >= 3:
        for split, names in SPLIT_BENCHMARKS.items():
            if parts[1] in names:
                return split
        return "generation"
    if parts[0] == "gen":
        return "generation"
    return "other"


def headline(available: Sequence[str]) -> list[str]:
    """The headline metrics that exist, panel by panel: per split digit accuracy, exact match and
    log error of its benchmark, digit entropy, CE, error entropy; then exact match and log error
    of the other benchmarks, and gen/macc when one of those is in it."""
    have = set(available)
    out: list[str] = []
    for split in splits(available):
        leaves = [f"eval/{split}/{leaf}" for leaf in HEADLINE_LEAVES]
        gen = [
            f"gen/{b}/{leaf}"
            for b in SPLIT_BENCHMARKS.get(split, ())
            for leaf in HEADLINE_GEN_LEAVES
            if f"gen/{b}/{leaf}" in have
        ]
        # digit accuracy, then the generated answers' scores, then the distribution's measures
        out += [m for m in [leaves[0], *gen, *leaves[1:]] if m in have]
    paired = {b for names in SPLIT_BENCHMARKS.values() for b in names}
    found = benchmarks(available)
    unpaired = [b for b in found if b not in paired]
    for b in unpaired:
        out += [f"gen/{b}/{leaf}" for leaf in HEADLINE_GEN_LEAVES if f"gen/{b}/{leaf}" in have]
    # gen/macc averages every benchmark's exact match: news only when it mixes in a benchmark
    # the split panels do not show (or when it is all there is).
    if "gen/macc" in have and (unpaired or not found):
        out.append("gen/macc")
    return out


def panels(metrics: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`metrics` grouped into panels (splits with `test` first, then generation, then other),
    keeping their order within a panel."""
    grouped: dict[str, list[str]] = {}
    for m in metrics:
        grouped.setdefault(panel_of(m), []).append(m)
    tail = {"generation": 1, "other": 2}
    return sorted(grouped.items(), key=lambda kv: (tail.get(kv[0], 0), kv[0] != "test", kv[0]))


def short_names(metrics: Sequence[str]) -> list[str]:
    """Column names inside one panel: `eval/<split>/leaf` → leaf, `gen/<b>/leaf` → `gen leaf`
    (`gen/<b>/leaf` for an unpaired benchmark); the full names where that would be ambiguous."""
    out = []
    for m in metrics:
        parts = m.split("/")
        if parts[0] == "eval" and len(parts) >= 3:
            out.append("/".join(parts[2:]))
        elif parts[0] == "gen" and len(parts) >= 3 and panel_of(m) != "generation":
            out.append("gen " + "/".join(parts[2:]))
        else:
            out.append(m)
    return out if len(set(out)) == len(out) else list(metrics)


def panel_title(panel: str, metrics: Sequence[str]) -> str:
    """ "split test (interpolation): eval/test/…, gen/mathgen/…" and the like."""
    if panel in ("generation", "other"):
        return panel
    prefixes = list(dict.fromkeys("/".join(m.split("/")[:2]) + "/…" for m in metrics))
    kind = PANEL_TITLES.get(panel)
    return f"split {panel}" + (f" ({kind})" if kind else "") + ": " + ", ".join(prefixes)
