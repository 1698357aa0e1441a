"""Command line: `numsweep {sweep,extend,status,compact,analyze,completion,study}` (also `python -m
orchestrator …`).

    numsweep sweep CONFIG [KEY=VALUE …] [--results DIR] [--name E] [--dry-run] [--print-config]
    numsweep extend E --trials N [--results DIR] [--verbose]
    numsweep status E [--results DIR] [--format table|json]
    numsweep compact E [--results DIR]
    numsweep analyze COMMAND RESULTS [options]     (= python -m analysis COMMAND …)
    numsweep completion bash                       (a bash completion script, from the parser)
    numsweep study {run,status,report,replay} FILE …   (orchestrator.study.commands)

An experiment may be named positionally or as `--experiment E`, and `python -m analysis` takes
`--results DIR` as well as its positional RESULTS, so `--results DIR --experiment E` is one
spelling both command lines read.

`sweep` on an experiment that already exists under the results root resumes it (unfinished and
errored trials continue from their last checkpoint); where its Ray state is not there (a fresh
clone of a committed store), the store's finished trials count as done and only the others run.
While it runs, the terminal gets numsweep's lines only: one progress line (redrawn on a
terminal, periodic lines otherwise) and a line per failed trial; Ray's, Tune's, Optuna's and
the trials' own output goes to `<results>/experiments/<E>/logs/` (`orchestrator.run.terminal`).
`--verbose` shows all of it, with Ray Tune's status tables instead of the progress line.
A results root may be a URI (s3://bucket/prefix: credentials from the AWS_* variables, a
non-AWS endpoint from AWS_ENDPOINT_URL). Exit codes: 0 done, 1 some trials failed, 2 bad input
(nothing launched, nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from analysis.cli_conventions import add_version
from orchestrator.completion import CompletableParser
from orchestrator.study.commands import add_study_parser, cmd_study
from records.errors import ResultsError

if TYPE_CHECKING:  # the sweep schema imports torch: a base (analysis-only) install has none
    from orchestrator.sweep.sweep_file import SweepConfig

DESCRIPTION = "Run, extend, inspect and analyse sweeps of numeric-learning losses on Ray."


class UsageError(ValueError):
    """Bad input on the command line; printed with exit code 2."""


def build_parser() -> CompletableParser:
    parser = CompletableParser(prog="numsweep", description=DESCRIPTION)
    add_version(parser)
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CompletableParser
    )

    def command(name: str, text: str) -> CompletableParser:
        made = sub.add_parser(name, help=text, description=text)
        parser.commands[name] = made
        return made

    sweep = command("sweep", "run (or resume) a sweep file on Ray")
    sweep.add_argument("config", help="sweep YAML file")
    sweep.add_argument("overrides", nargs="*", help="dotted overrides, e.g. train.lr=3e-4")
    sweep.add_argument(
        "--name",
        "--experiment",
        dest="name",
        metavar="E",
        help="experiment name (default: the sweep file's experiment: key)",
    )
    sweep.add_argument(
        "--dry-run",
        action="store_true",
        help="validate model, tokenizer and data, print the trial and resource plan, start nothing",
    )
    sweep.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved sweep (YAML, every default filled in, after the overrides) and "
        "exit without checking or launching anything",
    )
    _run_flags(sweep)
    _results_flags(sweep)
    extend = command("extend", "add trials to a search, continuing its Optuna study")
    _experiment_arg(extend)
    extend.add_argument("--trials", type=int, required=True, help="trials to add")
    _run_flags(extend)
    _results_flags(extend)
    status = command("status", "trials, states, best values and file locations")
    _experiment_arg(status)
    status.add_argument(
        "--format", "-f", choices=("table", "json"), default="table", help="output format"
    )
    _results_flags(status)
    compact = command("compact", "merge an experiment's Parquet parts")
    _experiment_arg(compact)
    _results_flags(compact)
    add_study_parser(sub)
    command("analyze", "tables, fits and the report (python -m analysis): analyze --help")
    completion = command("completion", "print a shell completion script")
    completion.add_argument("shell", choices=("bash",), help="the shell")
    return parser


def _experiment_arg(p: argparse.ArgumentParser) -> None:
    """E, positionally or as --experiment E (`python -m analysis`'s spelling)."""
    p.add_argument("experiment", nargs="?", metavar="E", help="experiment name")
    p.add_argument("--experiment", dest="experiment_flag", metavar="E", help="the same, as a flag")


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--verbose",
        action="store_true",
        help="Ray's, Tune's and the trials' own output on the terminal (Tune's status tables "
        "instead of the progress line); by default they go to the experiment's logs/ folder",
    )
    p.add_argument(
        "--no-summary",
        action="store_true",
        help="end (or stop) without the arms' results table and plateau warnings: counts and "
        "where the results are only; for a registered study whose tests wait for all trials",
    )


def _results_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--results", default="results", metavar="DIR", help="results root: a path or a URI"
    )
    p.add_argument("--address", help="Ray address (default: RAY_ADDRESS, else local Ray)")


def _results_root(value: str) -> str:
    """The results root as an absolute path (or the URI as given), checked to be usable before
    anything starts: UsageError names it when it cannot be written; nothing is created here."""
    if "://" in value:
        import pyarrow.fs as pafs

        try:
            pafs.FileSystem.from_uri(value)
        except Exception as err:  # pyarrow raises several types for a bad or unreachable URI
            raise UsageError(f"--results {value}: not a usable filesystem URI: {err}") from err
        return value
    if not Path(value).is_absolute() and os.environ.get("RAY_ADDRESS"):
        print(
            f"warning: --results {value} is relative: inside `ray job submit` it lands in the "
            "job's temporary copy of the project; give an absolute path on shared storage",
            file=sys.stderr,
        )
    root = Path(value).expanduser().resolve()
    existing = root
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"--results {value}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--results {value}: {existing} is not writable")
    return str(root)


def stored_sweep(root: str, experiment: str) -> SweepConfig | None:
    """The sweep config an experiment was started with (from its manifest), if it exists."""
    from orchestrator.sweep.sweep_file import SweepConfig
    from records.writer import ResultsStore

    manifest = ResultsStore(root, experiment).read_manifest()
    return None if manifest is None else SweepConfig.model_validate(manifest["config"])


def _check_resume(sweep: SweepConfig, root: str) -> bool:
    """True when the experiment exists (resume); UsageError when it exists with another config."""
    stored = stored_sweep(root, sweep.experiment)
    if stored is None:
        return False
    if stored != sweep:
        old, new = stored.model_dump(mode="json"), sweep.model_dump(mode="json")
        changed = sorted(_diff_keys(old, new))
        raise UsageError(
            f"experiment {sweep.experiment!r} exists under {root} with a different config "
            f"(changed: {', '.join(changed)}); resume it with the same file, add trials with "
            "`numsweep extend`, or pick another --name"
        )
    return True


def _diff_keys(old: object, new: object, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys: list[str] = []
        for key in sorted(set(old) | set(new)):
            keys += _diff_keys(old.get(key), new.get(key), f"{prefix}{key}.")
        return keys
    return [] if old == new else [prefix.rstrip(".")]


def cmd_sweep(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.name:
        overrides.append(f"experiment={args.name}")
    from orchestrator.sweep.sweep_file import load_sweep

    sweep = load_sweep(args.config, overrides)
    if args.print_config:
        # Hydra's `--cfg job`: the sweep as it would run, read back by `numsweep sweep`
        sys.stdout.write(yaml.safe_dump(sweep.model_dump(mode="json"), sort_keys=False))
        return 0
    _check_libraries()
    _check_tracking(sweep)
    root = _results_root(args.results)
    resume = _check_resume(sweep, root)

    from compat import UnsupportedVersion
    from orchestrator.sweep.preflight import preflight

    try:
        checks = preflight(sweep)
    except (ValueError, FileNotFoundError, OSError, UnsupportedVersion) as err:
        raise UsageError(f"{args.config}: {err}") from err
    print(f"numsweep: {sweep.experiment}: " + ", ".join(f"{k} {v}" for k, v in checks.items()))
    digits = checks["digit tokens"] == "yes"
    left = _store_resume(sweep, root) if resume else None
    if left is not None:
        print(f"numsweep: {left.describe(sweep.experiment)}")

    if args.dry_run:
        capacity = _dry_run_capacity(args.address)
        from orchestrator.sweep.plan import describe

        print(describe(sweep, _concurrency_or_usage(sweep, capacity), capacity))
        print(f"results would go to {root}" + (" (resuming)" if resume else ""))
        return 0
    if left is not None and not left.runs:
        return 0

    verb = "resuming" if resume else "starting"
    runs = None if left is None else left.runs
    return _launch(sweep, root, args, verb, runs, digits)


def _launch(
    sweep: SweepConfig, root: str, args: argparse.Namespace, verb: str, runs, digits: bool
) -> int:
    """Connect to Ray, run `runs` (None: the whole sweep) and print the end-of-sweep summary,
    with the libraries' output in the experiment's log files unless --verbose."""
    from orchestrator.run.driver import run_sweep
    from orchestrator.run.local_ray import cluster_capacity, connect
    from orchestrator.run.terminal import SweepOutput

    with SweepOutput(root, sweep.experiment, args.verbose) as output:
        how = connect(args.address)
        output.connected()
        max_concurrent = _concurrency_or_usage(sweep, cluster_capacity())
        at_once = f"{max_concurrent} trial(s) at a time"
        print(f"numsweep: {verb}; Ray ({how}), {at_once}, results in {root}")
        if output.logs is not None:
            print(f"numsweep: Ray's and the trials' output in {output.logs.directory}/")
        outcome = run_sweep(
            sweep,
            root,
            max_concurrent=max_concurrent,
            runs=runs,
            verbose=args.verbose,
            logs=output.logs,
        )
        summary = not args.no_summary
        return end_of_sweep(root, sweep, outcome.n_trials, outcome.n_errors, digits, summary)


def _store_resume(sweep: SweepConfig, root: str):
    """What is left by the store when the experiment's Ray state is not here (a fresh clone of
    a committed store), else None (Tune restores its runs)."""
    from orchestrator.store_resume import store_resume

    try:
        return store_resume(sweep, root)
    except ValueError as err:
        raise UsageError(str(err)) from err


def _check_libraries() -> None:
    """UsageError (exit 2) when Ray, DeepSpeed or the generator's libraries are outside the
    versions numsweep's uses of their private API were checked against (`compat`)."""
    from compat import UnsupportedVersion, check_installed

    try:
        check_installed()
    except UnsupportedVersion as err:
        raise UsageError(str(err)) from err


def _check_tracking(sweep: SweepConfig) -> None:
    from orchestrator.run.tracking import TrackingUnavailable, check_tracking

    try:
        check_tracking(sweep.tracking)
    except TrackingUnavailable as err:
        raise UsageError(str(err)) from err


def _concurrency_or_usage(sweep: SweepConfig, capacity: dict[str, float]) -> int:
    from orchestrator.sweep.plan import concurrency

    try:
        return concurrency(sweep, capacity)
    except ValueError as err:
        raise UsageError(str(err)) from err


def _dry_run_capacity(address: str | None) -> dict[str, float]:
    """The cluster's capacity without starting anything: the cluster's when one is named (joining
    it starts nothing), else what an embedded instance on this machine would have."""
    if address or os.environ.get("RAY_ADDRESS"):
        from orchestrator.run.local_ray import cluster_capacity, connect

        connect(address)
        return cluster_capacity()
    import torch

    return {"CPU": float(os.cpu_count() or 1), "GPU": float(torch.cuda.device_count())}


def summary_metrics(sweep: SweepConfig, available: list[str], digits: bool = True) -> list[str]:
    """The held-out metrics the end-of-sweep table shows: of what the metric registry says this
    sweep reports, the test split's headline metrics and gen/macc, where they were written."""
    from records.metric_names import HELD_OUT_LEAVES, MACC

    reported = set(sweep.reported_metrics(digits)) & set(available)
    wanted = [f"eval/test/{leaf}" for leaf in HELD_OUT_LEAVES] + [MACC]
    return [m for m in wanted if m in reported]


def end_of_sweep(
    root: str, sweep: SweepConfig, n_trials: int, n_errors: int, digits: bool, summary: bool
) -> int:
    """Print what a finished (or stopped) sweep left: with `summary`, the arms' table of its
    held-out metrics and, for a grid, the arms still learning; then the counts and the commands
    that read the results. The exit code: 1 when a trial failed."""
    if summary:
        _print_summary(root, sweep, digits)
    else:
        print("\nnumsweep: results summary held back (--no-summary)")
    experiment = sweep.experiment
    print(
        f"\n{n_trials} trials, {n_errors} failed. Results: {root}\n"
        "Next:\n"
        f"  numsweep status {experiment} --results {root}\n"
        f"  numsweep analyze ablation --results {root} --experiment {experiment}\n"
        f"  numsweep analyze entropy --results {root}\n"
        f"  numsweep analyze report --results {root} -o {root}/report\n"
    )
    return 1 if n_errors else 0


def _print_summary(root: str, sweep: SweepConfig, digits: bool) -> None:
    """The arms' table of the held-out metrics (the ablation command, through the analysis
    library) and, for a grid, the arms still learning."""
    from analysis.ablation import AblationSettings
    from analysis.commands import call
    from analysis.result import render
    from records.reader import metric_names, open_store

    experiment = sweep.experiment
    print()
    try:
        available = metric_names(open_store(root, [experiment]))
    except ResultsError:  # nothing written at all (every trial failed at once)
        available = []
    metrics = summary_metrics(sweep, available, digits)
    if metrics:
        try:
            table = call(AblationSettings(metrics=tuple(metrics)), root, [experiment])
        except ResultsError as err:  # the summary is a courtesy: the sweep's results stand
            print(f"error: {err}", file=sys.stderr)
        else:
            sys.stdout.write(render(table, "md"))
    if sweep.mode == "grid":
        from analysis.plateau import still_learning_warning

        # A grid compares arms at their final step: say so when that step is mid-learning.
        for line in still_learning_warning(root, experiment):
            print(line)


def cmd_extend(args: argparse.Namespace) -> int:
    root = _results_root(args.results)
    sweep = stored_sweep(root, args.experiment)
    if sweep is None:
        raise UsageError(f"no experiment {args.experiment!r} under {root}")
    if sweep.mode != "search":
        raise UsageError(f"experiment {args.experiment!r} is a grid; only searches can be extended")
    if args.trials < 1:
        raise UsageError(f"--trials must be >= 1, got {args.trials}")
    _check_libraries()
    _check_tracking(sweep)
    from orchestrator.sweep.plan import tune_runs
    from records.layout import ExperimentPaths

    index = _next_extension(ExperimentPaths(root, sweep.experiment), sweep)
    runs = tune_runs(sweep, extend_index=index, trials=args.trials)
    verb = f"extending {sweep.experiment} by {args.trials} trial(s)"
    return _launch(sweep, root, args, verb, runs, digits=True)


def _next_extension(paths, sweep: SweepConfig) -> int:
    from ray import tune

    from orchestrator.sweep.plan import tune_runs

    index = 1
    while any(
        tune.Tuner.can_restore(run.storage(paths)) for run in tune_runs(sweep, extend_index=index)
    ):
        index += 1
    return index


def cmd_status(args: argparse.Namespace) -> int:
    from orchestrator.status import experiment_status, status_record

    root = _results_root(args.results)
    sweep = stored_sweep(root, args.experiment)
    if sweep is None:
        raise UsageError(f"no experiment {args.experiment!r} under {root}")
    if args.format == "json":
        print(json.dumps(status_record(root, sweep), indent=2, default=str))
    else:
        print(experiment_status(root, sweep))
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from records.layout import TABLES
    from records.writer import ResultsStore

    root = _results_root(args.results)
    store = ResultsStore(root, args.experiment)
    if store.read_manifest() is None:
        raise UsageError(f"no experiment {args.experiment!r} under {root}")
    for table in TABLES:
        before, rows = store.compact(table)
        print(f"{table}: {before} part(s) -> 1, {rows} rows")
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from orchestrator.completion import bash_script

    sys.stdout.write(bash_script(build_parser()))
    return 0


COMMANDS = {
    "sweep": cmd_sweep,
    "extend": cmd_extend,
    "status": cmd_status,
    "compact": cmd_compact,
    "completion": cmd_completion,
    "study": cmd_study,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a sweep's KEY=VALUE overrides may come anywhere after the file
    (before, between or after the flags); an experiment positionally or as --experiment."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "sweep":
        overrides = [a for a in rest if "=" in a and not a.startswith("-")]
        args.overrides = [*args.overrides, *overrides]
        rest = [a for a in rest if a not in overrides]
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if hasattr(args, "experiment_flag"):
        flag, given = args.experiment_flag, args.experiment
        if flag is not None and given is not None and flag != given:
            parser.error(f"experiment {given} and --experiment {flag}: give one")
        args.experiment = given or flag
        if args.experiment is None:
            parser.error(f"{args.command}: give the experiment (E or --experiment E)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["analyze"]:
        from analysis.__main__ import main as analysis_main

        return analysis_main(argv[1:], prog="numsweep analyze")
    args = parse_args(argv)
    if args.command == "completion":  # like --version and --help: no sweep libraries needed
        return cmd_completion(args)
    try:
        from orchestrator.sweep.sweep_file import SweepFileError
    except ModuleNotFoundError as err:
        print(
            f"error: numsweep {args.command} needs {err.name}, which the base install (for "
            "analysis only) leaves out: pip install 'numsweep[sweep]' (docs/install.md)",
            file=sys.stderr,
        )
        return 2
    try:
        return COMMANDS[args.command](args)
    except (SweepFileError, UsageError, ResultsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
