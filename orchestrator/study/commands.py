"""`numsweep study {run,status,report,replay}`: the study subcommands (docs/studies.md).

    numsweep study run FILE [--results DIR] [--address A] [--verbose] [--pilot-only]
    numsweep study status FILE [--results DIR]
    numsweep study report FILE [--results DIR] [--format md|json|html] [-o DIR]
    numsweep study replay FILE --from STORE [--format md|json]

--results defaults to the folder `results` beside the study file. Exit codes: 0 done, 1 trials
failed or the study not finished (`run`: run it again), 2 refused (a bad study file, a design
over its budget, a file changed since registration, a report asked of a running study)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.study.errors import StudyError

if TYPE_CHECKING:
    from orchestrator.study.study_file import Study


class Subparsers(Protocol):
    """What the CLI's `add_subparsers()` returns, as far as this module uses it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_study_parser(sub: Subparsers) -> None:
    """The `study` command and its subcommands, on the CLI's subparsers."""
    study = sub.add_parser("study", help="a question to a registered, sequential verdict")
    actions = study.add_subparsers(dest="study_command", required=True)

    def common(p: argparse.ArgumentParser, results: bool = True) -> None:
        p.add_argument("file", help="study YAML file")
        if results:
            p.add_argument("--results", help="results root (default: results/ beside FILE)")

    run = actions.add_parser("run", help="pilot, power, registration, main stage look by look")
    common(run)
    run.add_argument("--address", help="Ray address (default: RAY_ADDRESS, else local Ray)")
    run.add_argument("--verbose", action="store_true", help="the libraries' output on the terminal")
    run.add_argument(
        "--pilot-only",
        action="store_true",
        help="run the pilot, print it and the design it sizes, and stop before registering",
    )
    common(actions.add_parser("status", help="where the study stands (blind: no arm's value)"))
    report = actions.add_parser("report", help="the stopped study's decision, estimates, cost")
    common(report)
    report.add_argument("--format", choices=("md", "json", "html"), default="md")
    report.add_argument(
        "-o", "--out", metavar="DIR", help="--format html: the folder of index.html and tables/"
    )
    replay = actions.add_parser("replay", help="the design applied to a store already run")
    common(replay, results=False)
    replay.add_argument("--from", dest="store", required=True, help="results store to replay")
    replay.add_argument("--format", choices=("md", "json"), default="md")


def _root(args: argparse.Namespace, study: Study) -> str:
    given = args.results or str(study.path.parent / "results")
    return given if "://" in given else str(Path(given).expanduser().resolve())


def _run(args: argparse.Namespace, study: Study) -> int:
    from orchestrator.study.launch import Launch
    from orchestrator.study.runner import run_study

    how = Launch(args.address, args.verbose)
    return run_study(_root(args, study), study, how, pilot_only=args.pilot_only)


def _status(args: argparse.Namespace, study: Study) -> int:
    from orchestrator.study.status import study_status

    print(study_status(_root(args, study), study))
    return 0


def _report(args: argparse.Namespace, study: Study) -> int:
    from analysis.result import render
    from orchestrator.study.report import study_report

    if (args.format == "html") != (args.out is not None):
        raise StudyError(
            "--format html writes a page: give -o DIR"
            if args.out is None
            else f"-o {args.out}: only --format html writes a folder; md and json print"
        )
    result = study_report(_root(args, study), study)  # refused before anything is written
    if args.format == "html":
        from orchestrator.study.report_html import write_study_html

        print(write_study_html(result, Path(args.out)))
        return 0
    sys.stdout.write(render(result, args.format))
    return 0


def _replay(args: argparse.Namespace, study: Study) -> int:
    from analysis.result import render
    from orchestrator.study.report import study_replay

    if not Path(args.store).is_dir() and "://" not in args.store:
        raise StudyError(f"--from {args.store}: no such results store")
    sys.stdout.write(render(study_replay(args.store, study), args.format))
    return 0


ACTIONS = {"run": _run, "status": _status, "report": _report, "replay": _replay}


def cmd_study(args: argparse.Namespace) -> int:
    """Run a study subcommand; refusals print `error: …` and return 2."""
    from orchestrator.study.study_file import StudyFileError, load_study
    from records.errors import ResultsError

    try:
        study = load_study(args.file)
        return ACTIONS[args.study_command](args, study)
    except (StudyFileError, StudyError, ResultsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
