"""`numsweep study status`: where a study stands, blind: its stage, looks taken, seeds and
trial-hours spent, and the next look's cost; never an arm's value (no metric but the trials'
costs is read while the study runs). Once it has stopped it names the decision and the look, and
`numsweep study report` gives the rest."""

from __future__ import annotations

import polars as pl

from analysis.sequential.trend import UNIT
from analysis.trial_costs import trial_costs
from orchestrator.study.looks import read_looks
from orchestrator.study.registration import read_registration
from orchestrator.study.sizing import MainDesign
from orchestrator.study.stages import main_seeds, main_sweep, pilot_sweep
from orchestrator.study.study_file import Study
from orchestrator.sweep.search_space import grid_arms
from records.reader import load_finished_trials, open_experiment


def _hours(root: str, experiment: str) -> float:
    store = open_experiment(root, experiment)
    costs = None if store is None else trial_costs(store)
    return 0.0 if costs is None else float(costs["wall_s"].sum()) / 3600


def _complete_seeds(root: str, study: Study, seeds: list[int], arms: int) -> int:
    """Seeds of the main stage whose every arm has a finished trial."""
    done = load_finished_trials(root, study.experiment)
    if done.height == 0 or "seed" not in done.columns:
        return 0
    per_seed = done.filter(pl.col("seed").is_in(seeds)).group_by("seed").len()
    return int(per_seed.filter(pl.col("len") >= arms).height)


def study_status(root: str, study: Study) -> str:
    lines = [f"study {study.experiment}: {study.spec.question}"]
    primary = study.spec.primary
    if primary.trend:
        presets = study.sweep.grid.presets or []
        lines.append(
            f"primary: {primary.metric} ({primary.summary}), treatment − reference as a "
            f"{UNIT} over {len(presets)} sizes ({', '.join(presets)}), one a seed"
        )
    record = read_registration(root, study)
    pilot_total = len(grid_arms(pilot_sweep(study)))
    pilot_done = load_finished_trials(root, study.pilot_experiment).height
    pilot_h = _hours(root, study.pilot_experiment)
    lines.append(f"pilot: {pilot_done} of {pilot_total} trials finished, {pilot_h:.3g} trial-hours")
    if record is None:
        lines.append("not registered yet: `numsweep study run` runs the pilot, sizes and registers")
        return "\n".join(lines)
    d = MainDesign.from_json(record["design"])
    lines.append(
        f"registered {record['registered_at']} (revision {record['code']['git_revision']}): "
        f"looks at {', '.join(map(str, d.seeds))} paired seeds, {d.spending}, "
        f"up to {d.max_hours:.3g} trial-hours (fixed design: "
        + ("—" if d.fixed_hours is None else f"{d.fixed_seeds} seeds, {d.fixed_hours:.3g} h")
        + ")"
    )
    per_seed_arms = len(grid_arms(main_sweep(study, 1)))  # the trials of one seed
    seeds = main_seeds(study, d.seeds[-1])
    complete = _complete_seeds(root, study, seeds, per_seed_arms)
    lines.append(
        f"main stage: {complete} of {d.seeds[-1]} paired seeds complete, "
        f"{_hours(root, study.experiment):.3g} trial-hours spent"
    )
    looks = read_looks(root, study)
    for e in looks:
        went = f"stopped: {e['decision']}" if e["stopped"] else "no decision, went on"
        lines.append(f"  look {e['look']} at {e['seeds']} paired seeds ({e['at']}): {went}")
    if looks and looks[-1]["stopped"]:
        lines.append(f"finished: numsweep study report {study.path}")
    else:
        k = len(looks) + 1
        lines.append(
            f"next: look {k} of {len(d.seeds)} at {d.seeds[k - 1]} paired seeds, "
            f"{d.look_hours(k):.3g} trial-hours"
        )
    return "\n".join(lines)
