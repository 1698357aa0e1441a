"""Arms: sets of trials that differ only in their seed, the rows of every per-loss table.

An arm is keyed by the `by` columns (default: loss) plus every other configuration column that
takes more than one value within a `by` group, so trials with different learning rates, models or
experiments are never averaged together as if they were seeds. The seed column is never a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from analysis.sweep_manifest import is_sampled
from records.errors import ResultsError
from records.reader import config_columns

CONTROL = "control"
"""The trials-table column naming a grid control arm (null for regular arms)."""


def format_value(value: Any) -> str:
    """A configuration value as shown in labels: floats in shortest %g form."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def plain_value(value: Any) -> Any:
    """A configuration value as a CSV-friendly scalar (timestamps and the like as strings)."""
    return value if isinstance(value, int | float | str | bool) or value is None else str(value)


@dataclass(frozen=True)
class Arms:
    """Trials grouped into arms."""

    members: pl.DataFrame
    """experiment, trial_id, arm (label), seed_key (str: the seed, or the trial id when the seed is
    missing so such trials never pair up) and the key columns."""
    keys: tuple[str, ...]
    order: tuple[str, ...]
    """Arm labels in display order: baseline arms first, then sorted by key values."""
    key_values: dict[str, dict[str, Any]]
    """Arm label -> {key column: value}."""
    notes: list[str] = field(default_factory=list)


def _label(values: dict[str, Any], shown: dict[str, Any] | None = None) -> str:
    """`loss (key=value, …)` from an arm's key values, then the `shown` values (sampled
    parameters that are one value within the arm)."""
    parts = [format_value(values["loss"])] if values.get("loss") is not None else []
    every = {**values, **(shown or {})}
    extra = [f"{k}={format_value(v)}" for k, v in every.items() if k != "loss" and v is not None]
    if parts and extra:
        return f"{parts[0]} ({', '.join(extra)})"
    return parts[0] if parts else ", ".join(extra) or "(no config)"


def _check_columns(
    configs: Sequence[str], by: Sequence[str], pool: Sequence[str], block: Sequence[str]
) -> None:
    """ResultsError for --by, --pool or --block columns that are unknown, the seed, or given to
    more than one of them."""
    available = ", ".join(c for c in configs if c != "seed")
    unknown = [c for c in by if c not in configs]
    if unknown:
        raise ResultsError(
            f"unknown column {', '.join(map(repr, unknown))} for --by; available: {available}"
        )
    if "seed" in by:
        raise ResultsError("--by seed: seeds are what an arm averages over, not an arm key")
    unknown_pool = [c for c in pool if c not in configs]
    if unknown_pool:
        raise ResultsError(
            f"unknown column {', '.join(map(repr, unknown_pool))} for --pool; "
            f"available: {available}"
        )
    clash = [c for c in pool if c in by or c == "seed"]
    if clash:
        raise ResultsError(f"--pool {', '.join(clash)}: a row key or the seed cannot be pooled")
    unknown_block = [c for c in block if c not in configs]
    if unknown_block:
        raise ResultsError(
            f"unknown column {', '.join(map(repr, unknown_block))} for --block; "
            f"available: {available}"
        )
    clash = [c for c in block if c in by or c in pool or c == "seed"]
    if clash:
        raise ResultsError(
            f"--block {', '.join(clash)}: a row key, a pooled column or the seed cannot be a block"
        )


def _arm_keys(
    trials: pl.DataFrame,
    configs: Sequence[str],
    by: Sequence[str],
    pool: Sequence[str],
    block: Sequence[str],
) -> tuple[list[str], list[str]]:
    """`by` plus every other configuration column that varies within a `by` group; and the
    varying columns left out because the block decides them (one value per block)."""
    # Pooled columns may vary inside an arm (one study run as several experiments); so may block
    # columns, whose values then tell an arm's units apart (a unit is a block and a seed).
    others = [c for c in configs if c not in by and c != "seed" and c not in pool]
    others = [c for c in others if c not in block]
    keys = list(by)
    if not (others and trials.height):
        return keys, []
    spread = trials.group_by(list(by)).agg(pl.col(c).n_unique() for c in others)
    varying = [c for c in others if spread[c].max() > 1]
    decided: list[str] = []
    if block:
        # A column with one value per block (a learning rate chosen per model size) goes with
        # the block: paired units share it, so it need not split the arms.
        within = trials.group_by(list(block)).agg(pl.col(c).n_unique() for c in varying)
        decided = [c for c in varying if within[c].max() <= 1]
    return keys + [c for c in varying if c not in decided], decided


def _seed_key(trials: pl.DataFrame, block: Sequence[str]) -> pl.Expr:
    """The unit a paired test matches on: the seed (the trial id where it is missing), prefixed
    with the block columns' values."""
    seed_key = (
        pl.when(pl.col("seed").is_not_null())
        .then(pl.col("seed").cast(pl.String()))
        .otherwise(pl.lit("trial:") + pl.col("trial_id"))
        if "seed" in trials.columns
        else pl.lit("trial:") + pl.col("trial_id")
    )
    if block:
        # Units are (block, seed): paired tests match a block's seed with the same block's seed.
        parts = [pl.col(c).cast(pl.String()).fill_null("null") for c in block]
        seed_key = pl.concat_str([*parts, seed_key], separator="/")
    return seed_key


def _unit_notes(trials: pl.DataFrame, pool: Sequence[str], block: Sequence[str]) -> list[str]:
    """Notes on what an arm pools over and what one of its units is."""
    notes = []
    if block:
        notes.append(
            f"blocks of {', '.join(block)}: an arm pools them; a unit is one "
            f"{'/'.join(block)} value and one seed, paired tests match units"
        )
    if pool:
        them = "it" if len(pool) == 1 else "them"
        notes.append(
            f"pooled over {', '.join(pool)}: trials that differ in {them} (and the seed) share "
            "an arm"
        )
    if "seed" not in trials.columns:
        notes.append("the trials table has no seed column: every trial counts as its own seed")
    return notes


def _sampled_values(
    trials: pl.DataFrame, keys: list[str], sampled: frozenset[tuple[str | None, str]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per arm (its key values, in `keys` order): the sampled columns that are not keys and hold
    one value across the arm's trials (an arm of one trial: its sampled values)."""
    columns = [c for c in config_columns(trials) if c not in keys and c != "seed"]
    columns = [c for c in columns if any(column == c for _, column in sampled)]
    if not columns or not keys:
        return {}
    spread = trials.group_by(keys).agg(
        (pl.col("loss") if "loss" in trials.columns else pl.lit(None)).first().alias("_loss"),
        *(pl.col(c).drop_nulls().unique().alias(c) for c in columns),
    )
    out = {}
    for row in spread.iter_rows(named=True):
        loss = row.pop("_loss", None)
        out[tuple(row[k] for k in keys)] = {
            c: row[c][0] for c in columns if len(row[c]) == 1 and is_sampled(sampled, loss, c)
        }
    return out


def _label_arms(
    members: pl.DataFrame,
    keys: list[str],
    baseline_column: str,
    baseline: str | None,
    shown: dict[tuple[Any, ...], dict[str, Any]],
) -> tuple[pl.DataFrame, list[str], dict[str, dict[str, Any]]]:
    """`members` with each trial's arm label, the labels in display order (baseline arms
    first), and each label's key values."""
    distinct = members.select(keys).unique().sort(keys, nulls_last=True)
    key_values = {}
    labels = []
    for row in distinct.iter_rows(named=True):
        label = _label(row, shown.get(tuple(row[k] for k in keys)))
        key_values[label] = row
        labels.append(label)
    is_base = [
        baseline is not None
        and key_values[label].get(CONTROL) is None  # a control arm is never a baseline
        and (label == baseline or key_values[label].get(baseline_column) == baseline)
        for label in labels
    ]
    order = [lb for lb, b in zip(labels, is_base, strict=True) if b] + [
        lb for lb, b in zip(labels, is_base, strict=True) if not b
    ]
    label_frame = pl.DataFrame(
        {**{k: [key_values[lb][k] for lb in labels] for k in keys}, "arm": labels},
        schema={**{k: members.schema[k] for k in keys}, "arm": pl.String()},
    )
    members = members.join(label_frame, on=keys, how="left", nulls_equal=True)
    return members, order, key_values


def assign_arms(
    trials: pl.DataFrame,
    by: Sequence[str] = ("loss",),
    *,
    pool: Sequence[str] = (),
    block: Sequence[str] = (),
    baseline_column: str = "loss",
    baseline: str | None = "mle",
    sampled: frozenset[tuple[str | None, str]] = frozenset(),
) -> Arms:
    """Group `trials` (a `load_trials` frame) into arms keyed by `by` plus the configuration columns
    that vary within a `by` group. A parameter a search `sampled` (analysis.sweep_manifest)
    that is one value within an arm is named in its label too, though it does not key the arm:
    an arm `del` that ran at a sampled α 0.161 is `del (alpha=0.161)`."""
    configs = config_columns(trials)
    _check_columns(configs, by, pool, block)
    keys, decided = _arm_keys(trials, configs, by, pool, block)
    seed_key = _seed_key(trials, block)
    notes = _unit_notes(trials, pool, block)
    if decided:
        notes.append(
            f"{', '.join(decided)} varies with {'/'.join(block)} (one value per block): a unit "
            "carries its block's value, so paired units share it and it does not split the arms"
        )
    # `experiment` may itself be a key (several experiments, the same losses): select it once.
    members = trials.select(
        "experiment",
        "trial_id",
        seed_key.alias("seed_key"),
        *[k for k in keys if k not in ("experiment", "trial_id")],
    )
    shown = _sampled_values(trials, keys, sampled) if sampled else {}
    members, order, key_values = _label_arms(members, keys, baseline_column, baseline, shown)
    repeated = members.group_by("arm", "seed_key").len().filter(pl.col("len") > 1)
    if repeated.height:
        arm, seed = repeated.sort("arm", "seed_key").row(0)[:2]
        raise ResultsError(
            f"arm {arm!r} holds several trials of seed {seed} (pooled over "
            f"{', '.join(pool) or 'nothing'}): an arm averages over seeds, each once; pool fewer "
            "columns or select the experiments"
        )
    split = [k for k in keys if k not in by]
    if split:
        verb = "it varies" if len(split) == 1 else "they vary"
        notes.append(
            f"rows are split by {', '.join(split)} as well: {verb} within {', '.join(by)}, "
            "and only trials that differ in nothing but the seed are averaged"
        )
    return Arms(members, tuple(keys), tuple(order), key_values, notes)


def baseline_arm(
    arms: Arms, label: str, *, column: str = "loss", value: str = "mle"
) -> tuple[str | None, str | None]:
    """The baseline arm to compare arm `label` with, or (None, reason).

    `value` may be an arm's label: then that arm is every other arm's baseline. Otherwise the
    baseline is the arm whose `column` equals `value` and that agrees with `label` on every
    other key column where both have a value (an mle arm has no alpha; it still matches a del arm
    with any alpha but the same learning rate and model). A control arm (`control` set, e.g. mle
    with another data order) is never the baseline: it is compared with the regular one.
    """
    if value in arms.key_values:
        # The baseline named by its arm label ("del (distance=False)"): that one arm, for every
        # other arm (e.g. a loss against one of its own variants).
        return (None, None) if label == value else (value, None)
    mine = arms.key_values[label]
    if column not in arms.keys:
        return None, f"no {column} column among the row keys: no comparison with {value}"
    if mine.get(column) == value and mine.get(CONTROL) is None:
        return None, None
    matches = []
    for other, theirs in arms.key_values.items():
        # A control arm (another data order, say) is never a baseline; it is compared with the
        # regular baseline arm, like every other arm.
        if theirs.get(column) != value or theirs.get(CONTROL) is not None:
            continue
        if all(
            mine[k] is None or theirs[k] is None or mine[k] == theirs[k]
            for k in arms.keys
            if k not in (column, CONTROL)
        ):
            matches.append(other)
    if not matches:
        return None, f"no {value} arm with the same configuration"
    if len(matches) > 1:
        return None, f"several {value} arms match ({'; '.join(matches)})"
    return matches[0], None
