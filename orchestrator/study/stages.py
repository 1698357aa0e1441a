"""The sweeps a study runs, made from its sweep file: the pilot's (its seeds and arms, in the
experiment `<experiment>-pilot`) and the main stage's (the design's seeds, in the sweep's own
experiment), and which of the main stage's trials each look adds. No Ray here."""

from __future__ import annotations

from typing import Any

from orchestrator.study.study_file import Study
from orchestrator.sweep.search_space import grid_arms
from orchestrator.sweep.sweep_file import SweepConfig


def _with_grid(sweep: SweepConfig, experiment: str, **grid: Any) -> SweepConfig:
    data = sweep.model_dump(mode="json")
    data["experiment"] = experiment
    data["grid"].update(grid)
    return SweepConfig.model_validate(data)


def pilot_sweep(study: Study) -> SweepConfig:
    """The pilot: the study's pilot seeds of its pilot arms (every loss of the grid by default)."""
    sweep = study.runnable_sweep()
    losses = study.spec.pilot.arms or sweep.grid.losses
    params = {
        k: v for k, v in sweep.model_dump(mode="json")["grid"]["params"].items() if k in losses
    }
    params.update(study.spec.pilot.params or {})  # the variants the pilot runs (study_file)
    return _with_grid(
        sweep,
        study.pilot_experiment,
        seeds=list(study.spec.pilot.seeds),
        losses=losses,
        params=params,
    )


def main_seeds(study: Study, max_seeds: int) -> list[int]:
    """The main stage's seeds, in the order its looks add them."""
    first = study.spec.design.first_seed
    return list(range(first, first + max_seeds))


def main_sweep(study: Study, max_seeds: int) -> SweepConfig:
    """The main stage at its maximum: what its experiment's manifest records."""
    sweep = study.runnable_sweep()
    return _with_grid(sweep, study.experiment, seeds=main_seeds(study, max_seeds))


def _one_seed(study: Study) -> list[dict[str, Any]]:
    return grid_arms(_with_grid(study.runnable_sweep(), study.experiment, seeds=[0]))


def arms_per_seed(study: Study) -> int:
    """The main stage's trials on one seed: every arm of its grid (its losses' variants)."""
    return len(_one_seed(study))


def treatments(study: Study) -> int:
    """The arms compared with the reference on a seed (control arms excepted): the size of the
    Holm family the replay judges superiority in. With a trend the sizes are one arm's units,
    not arms: a treatment is a loss variant across every preset."""
    reference = study.spec.reference
    sizes = ("preset", "lr") if study.spec.primary.trend else ()
    compared = {
        tuple(sorted((k, str(v)) for k, v in a.items() if k not in sizes))
        for a in _one_seed(study)
        if a["loss"] != reference and "control" not in a
    }
    return len(compared)


def look_sweep(study: Study, looks: tuple[int, ...], look: int) -> SweepConfig:
    """The seeds look `look` (1-based) adds, as a grid of their own (for the store's resume
    rule: which of them finished)."""
    seeds = main_seeds(study, looks[-1])
    start = 0 if look == 1 else looks[look - 2]
    return _with_grid(
        study.runnable_sweep(), study.experiment, seeds=seeds[start : looks[look - 1]]
    )


def look_arms(study: Study, looks: tuple[int, ...], look: int) -> list[dict[str, Any]]:
    """The trials look `look` adds: every arm of the grid on its new seeds."""
    return grid_arms(look_sweep(study, looks, look))
