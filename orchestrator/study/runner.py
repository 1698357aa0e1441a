"""`numsweep study run`: from a study file to a verdict, resumable by running it again.

1. the pilot (its seeds of its arms), unless its trials are in the store;
2. the design sized at the pilot's spread and priced at its cost (sizing.py); over the budget:
   refused, nothing registered;
3. the registration record, before the first main-stage trial (registration.py); once it exists,
   a study file that says anything else is refused;
4. the main stage look by look until a look decides (looks.py).

Exit codes: 0 the study stopped (a decision, or its last look taken), 1 trials failed (run again
to retry them), 2 refused (bad file, over budget, changed since registration)."""

from __future__ import annotations

from analysis.sequential.trend import UNIT
from orchestrator.study.errors import StudyError
from orchestrator.study.launch import Launch, run_trials, runs_left
from orchestrator.study.looks import run_main
from orchestrator.study.pilot import PilotSummary, summarise_pilot
from orchestrator.study.registration import check_unchanged, read_registration, register
from orchestrator.study.sizing import MainDesign, check_budget, size_design
from orchestrator.study.stages import main_seeds, pilot_sweep
from orchestrator.study.study_file import Study


def _preflight(study: Study) -> None:
    """The libraries' versions and the sweep's model, tokenizer and data, before any trial."""
    from compat import UnsupportedVersion, check_installed
    from orchestrator.sweep.preflight import preflight

    try:
        check_installed()
        preflight(study.runnable_sweep())
    except (ValueError, FileNotFoundError, OSError, UnsupportedVersion) as err:
        raise StudyError(f"{study.path}: sweep: {err}") from err


def _pilot(root: str, study: Study, how: Launch) -> PilotSummary | None:
    """The pilot's summary, running whatever of the pilot the store lacks; None (having said
    why): trials failed, or the run stopped before they finished."""
    sweep = pilot_sweep(study)
    name = f"{study.pilot_experiment}-run"
    runs = runs_left(sweep, root, name)
    if runs:
        print(
            f"numsweep: study {study.experiment}: pilot, {len(study.spec.pilot.seeds)} seeds "
            f"-> {study.pilot_experiment}"
        )
        if run_trials(sweep, root, runs, how):
            print("numsweep: pilot trials failed; run the same command again to retry them")
            return None
        # Tune ends a run it was asked to stop (SIGINT) as it ends a finished one: the store says
        # which it was, and a pilot with arms unfinished is not summarised.
        left = runs_left(sweep, root, name)
        if left:
            arms = len(left[0].arms or ()) or left[0].num_trials
            print(
                f"numsweep: the pilot stopped with {arms} of its trials unfinished "
                "(interrupted); run the same command to resume it"
            )
            return None
    return summarise_pilot(root, study)


def _check_seeds(study: Study, design: MainDesign) -> None:
    clash = sorted(set(study.spec.pilot.seeds) & set(main_seeds(study, design.seeds[-1])))
    if clash:
        raise StudyError(
            f"{study.path}: pilot.seeds: {clash} would also be main-stage seeds (the design "
            f"runs {design.seeds[-1]} from design.first_seed {study.spec.design.first_seed})"
        )


def describe_design(d: MainDesign) -> str:
    fixed = (
        ""
        if d.fixed_seeds is None
        else f"; fixed design {d.fixed_seeds} seeds, {d.fixed_hours:.3g} h"
    )
    return (
        f"looks at {', '.join(map(str, d.seeds))} paired seeds ({d.spending}, α {d.alpha:g}, "
        f"power {d.power_reached:.2f} at sd {d.sd:.3g}); up to {d.max_hours:.3g} trial-hours, "
        f"expected {d.expected_seeds_at_zero:.1f}–{d.expected_seeds_at_sesoi:.1f} seeds{fixed}"
    )


def describe_pilot(pilot: PilotSummary, trend: bool = False) -> str:
    """The pilot's differences (with a trend: the seeds' slopes per decade of N) and cost."""
    what = f" ({UNIT})" if trend else ""
    arms = "; ".join(
        f"{a.arm} − {a.reference}{what}: mean {a.mean:.3g}, sd {a.sd:.3g} ({a.pairs} pairs)"
        for a in pilot.arms
    )
    return (
        f"pilot {pilot.experiment}: {arms}; {pilot.trial_hours:.3g} trial-hours, "
        f"{pilot.hours_per_seed:.3g} a main-stage seed"
    )


def run_study(root: str, study: Study, how: Launch, pilot_only: bool = False) -> int:
    """Run the study as far as it goes (module docstring); `pilot_only`: stop before the
    registration, printing the pilot's summary and the design it would register."""
    record = read_registration(root, study)
    if record is not None:
        check_unchanged(record, study, root)
        design = MainDesign.from_json(record["design"])
        print(f"numsweep: study {study.experiment}: registered at {record['registered_at']}")
        if pilot_only:
            return 0
    else:
        _preflight(study)
        pilot = _pilot(root, study, how)
        if pilot is None:
            return 1
        design = size_design(study, pilot)
        _check_seeds(study, design)
        said = describe_pilot(pilot, study.spec.primary.trend is not None)
        if pilot_only:
            print(f"numsweep: study {study.experiment}: {said}")
            print(f"numsweep: study {study.experiment}: would register: {describe_design(design)}")
        check_budget(study, design)
        if pilot_only:
            print("numsweep: not registered (--pilot-only); run without it to register and go on")
            return 0
        register(root, study, pilot, design)
        print(f"numsweep: study {study.experiment}: {said}")
        print(f"numsweep: study {study.experiment}: registered: {describe_design(design)}")
    outcome = run_main(root, study, design, how)
    if outcome.failed or outcome.replay is None or not outcome.replay.stopped:
        print(
            f"numsweep: study {study.experiment}: not finished ({outcome.failed} trial(s) "
            "failed); run the same command again to go on"
        )
        return 1
    r = outcome.replay
    print(
        f"numsweep: study {study.experiment}: stopped at look {r.look} ({r.seeds} paired seeds): "
        f"{r.decision}\nReport: numsweep study report {study.path} --results {root}"
    )
    return 0
