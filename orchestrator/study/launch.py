"""Running a study's trials on Ray: the pilot's or one look's, through the sweep driver (the
same Tune runs, store, resume and logs as `numsweep sweep` and `extend`), never its end-of-sweep
summary: a study stays blind until its looks are judged. Ray is started (or joined) once per
command, at the first trials that need running."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from orchestrator.study.errors import StudyError
from orchestrator.sweep.plan import TuneRun, concurrency, tune_runs
from orchestrator.sweep.sweep_file import SweepConfig


@dataclass(frozen=True)
class Launch:
    """How to start trials: the Ray address (None: RAY_ADDRESS, else a local instance) and
    whether the libraries' output goes to the terminal."""

    address: str | None = None
    verbose: bool = False


def runs_left(sweep: SweepConfig, root: str, name: str) -> list[TuneRun]:
    """The Tune run `name` (never the sweep's own name) for `sweep`'s grid arms that have no
    finished trial in the store; none when every arm has one. An interrupted run of it (its Ray
    state is there) is restored by Tune: its unfinished and errored trials continue from their
    checkpoints. The run carries the store's arms left either way: they are what a restored run
    starts from where Tune saved no trials yet (killed as it began), never another look's."""
    from orchestrator.store_resume import store_resume

    if name == tune_runs(sweep)[0].name:
        raise ValueError(f"a study's Tune run is named apart from its experiment, got {name!r}")
    left = store_resume(sweep, root)  # the sweep's own run never ran: the store decides
    if left is None or not left.runs:
        return []
    return [dataclasses.replace(left.runs[0], name=name)]


def run_trials(manifest_sweep: SweepConfig, root: str, runs: list[TuneRun], how: Launch) -> int:
    """Run `runs` of `manifest_sweep`'s experiment; the number of failed trials."""
    from orchestrator.run.driver import run_sweep
    from orchestrator.run.local_ray import cluster_capacity, connect
    from orchestrator.run.terminal import SweepOutput

    with SweepOutput(root, manifest_sweep.experiment, how.verbose) as output:
        connect(how.address)
        output.connected()
        try:
            at_once = concurrency(manifest_sweep, cluster_capacity())
        except ValueError as err:
            raise StudyError(str(err)) from err
        if output.logs is not None:
            print(f"numsweep: Ray's and the trials' output in {output.logs.directory}/")
        outcome = run_sweep(
            manifest_sweep, root, max_concurrent=at_once, runs=runs, verbose=how.verbose,
            logs=output.logs,
        )  # fmt: skip
    return outcome.n_errors
