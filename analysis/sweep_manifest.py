"""What each experiment's sweep file said, read from its manifest (`experiments/<E>/manifest.json`,
written once by `numsweep sweep`): whether it was a search, the objectives Optuna optimised
(what `numsweep status` ranks trials by) and the loss parameters it sampled. Stores without
manifests (synthetic or hand-written ones) have none: every function here then says nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from records.errors import ResultsError
from records.reader import Store
from records.writer import ResultsStore

ANY_LOSS = None
"""The loss part of a sampled parameter given bare in the search space (`alpha`: every searched
loss that takes it)."""


def sweep_configs(store: Store) -> dict[str, dict[str, Any]]:
    """Experiment -> the resolved sweep (`config` of its manifest), for the store's experiments
    that have a manifest. A manifest that is not JSON is an error naming its file."""
    configs = {}
    for experiment in store.experiments:
        results = ResultsStore(str(store.root), experiment)
        try:
            manifest = results.read_manifest()
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultsError(f"{results.paths.manifest}: not a JSON manifest ({e})") from e
        if manifest is not None and isinstance(manifest.get("config"), dict):
            configs[experiment] = manifest["config"]
    return configs


@dataclass(frozen=True)
class SweepObjectives:
    """The objectives the store's search sweeps optimised: (metric, "max"|"min") each, and
    which experiments' manifests said so."""

    objectives: tuple[tuple[str, str], ...]
    experiments: tuple[str, ...]


def search_objectives(configs: Mapping[str, dict[str, Any]]) -> SweepObjectives | None:
    """The objectives of the search-mode sweeps among `configs` (from `sweep_configs`), as
    `numsweep status` ranks them; None when there is no search or when the searches disagree."""
    found: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for experiment, config in configs.items():
        if config.get("mode") != "search":
            continue
        objectives = (config.get("search") or {}).get("objectives") or []
        key = tuple((str(o["metric"]), str(o.get("mode", "max"))) for o in objectives)
        if key:
            found.setdefault(key, []).append(experiment)
    if len(found) != 1:
        return None
    (objectives, experiments), *_ = found.items()
    return SweepObjectives(objectives, tuple(experiments))


def sampled_parameters(configs: Mapping[str, dict[str, Any]]) -> frozenset[tuple[str | None, str]]:
    """The trials-table columns the search sweeps among `configs` sampled, as (loss, column):
    `("del", "alpha")` for `del.alpha`, `(ANY_LOSS, "alpha")` for a bare `alpha`, and
    `(ANY_LOSS, "lr")` for the learning rate."""
    sampled: set[tuple[str | None, str]] = set()
    for config in configs.values():
        if config.get("mode") != "search":
            continue
        for key in (config.get("search") or {}).get("space") or {}:
            loss, dot, column = str(key).rpartition(".")
            sampled.add((loss if dot else ANY_LOSS, column))
    return frozenset(sampled)


def is_sampled(sampled: frozenset[tuple[str | None, str]], loss: str | None, column: str) -> bool:
    """Whether `column` was sampled in trials of `loss`."""
    return (loss, column) in sampled or (ANY_LOSS, column) in sampled


def store_sampled(store: Store) -> frozenset[tuple[str | None, str]]:
    """`sampled_parameters` of the store's experiments: what every command's arm labels name."""
    return sampled_parameters(sweep_configs(store))
