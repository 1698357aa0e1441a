"""Command line: `python -m analysis {ablation,entropy,scaling,search,power,plateau,predict,
sequential-replay,report} RESULTS [options]`; `scaling`, `predict` and `report` also read a points
table instead (`--points FILE`, CSV or Parquet, no RESULTS); `sequential` reads nothing (a
design's boundaries from its options).

Tables go to stdout: Markdown by default; `--format csv` prints the numbers and sends the header
and notes to stderr; `--format json` prints everything (header, settings, notes, every table's
cells and full-precision records) as one JSON document; `--format latex` booktabs tables. Bad
input (missing RESULTS, unknown experiment, metric, column, status or option value) exits with
status 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from analysis.cli_conventions import ConventionalParser, add_version
from analysis.commands import COMMANDS, TABLE_COMMANDS, Command, call
from analysis.result import FORMATS, Result, render, text_notes
from analysis.settings_flags import add_flags, from_flags, split_list
from records.errors import ResultsError

COLUMNS = "columns."
"""The dest prefix of a points table's column flags (table_points.TableColumns)."""


PROG = "python -m analysis"


def build_parser(command: str | None = None, prog: str = PROG) -> argparse.ArgumentParser:
    """The parser of every command, with the options of `command` only (None: none, as for
    `python -m analysis --help`): a command's options come from its settings class, whose module
    imports polars and scipy, so a command line imports its own command's module alone. `prog`:
    the name usage lines give (`numsweep analyze` passes its own)."""
    parser = ConventionalParser(
        prog=prog, description="Tables, fits and a report from a numsweep results directory."
    )
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ConventionalParser)
    for name, spec in COMMANDS.items():
        # help strings are %-formatted by argparse, descriptions are not
        p = sub.add_parser(name, help=spec.help, description=spec.help.replace("%%", "%"))
        if name == command:
            _add_inputs(p, name, spec)
            add_flags(p, spec.load("settings"))
    return parser


def _add_inputs(p: argparse.ArgumentParser, name: str, spec: Command) -> None:
    """What a command reads (RESULTS, --experiment; --points and its columns) and --format:
    the options that are not settings."""
    if not spec.reads_store:
        p.add_argument("--format", choices=FORMATS, default="md", help="output format")
        return
    p.add_argument(
        "results",
        metavar="RESULTS",
        nargs="?",
        help="the results root of a sweep: a path or a URI (s3://bucket/prefix)"
        + (" (or --points FILE)" if spec.points else "")
        + "; or --results DIR",
    )
    # numsweep's spelling (`numsweep status E --results DIR`), so one command line fits both
    p.add_argument(
        "--results",
        dest="results_flag",
        metavar="DIR",
        help="the results root, as numsweep's commands take it (instead of RESULTS)",
    )
    p.add_argument(
        "--experiment",
        action="append",
        metavar="E",
        help="experiment(s) to analyse (repeatable; default: all in RESULTS)",
    )
    if name != "report":
        p.add_argument("--format", choices=FORMATS, default="md", help="output format")
    if spec.points:
        from analysis.scaling.table_points import TableColumns

        g = p.add_argument_group("a points table instead of RESULTS")
        g.add_argument(
            "--points",
            metavar="FILE",
            help="a CSV or Parquet table of (N, D, metric) rows made anywhere (a paper's points, "
            "runs logged elsewhere) to fit instead of a results store",
        )
        if name != "predict":  # predict's settings hold their columns (--n-col, --d-col)
            add_flags(g, TableColumns, COLUMNS)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command `argv` names (its first word), if it is one."""
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def _settings(args: argparse.Namespace, spec: Command) -> Any:
    """The command's settings from its flags; a points table's metric for predict."""
    settings = from_flags(args, spec.load("settings"))
    if args.command == "predict" and args.points is not None and settings.metric:
        columns = replace(settings.columns, metrics=(settings.metric,))
        settings = replace(settings, columns=columns, metric=None)
    return settings


def _results_once(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """RESULTS positionally or as --results DIR (numsweep's spelling), once; a usage error
    (exit 2), as argparse's for a missing argument, when neither is given (but --points may be)
    or both differ."""
    if not COMMANDS[args.command].reads_store:
        return  # sequential: boundaries from numbers, no store
    flag = args.results_flag
    if flag is not None and args.results is not None and flag != args.results:
        parser.error(f"RESULTS {args.results} and --results {flag}: give one")
    args.results = args.results if flag is None else flag
    if args.command not in TABLE_COMMANDS and args.results is None:
        parser.error(f"{args.command}: give RESULTS (or --results DIR)")


def _check_inputs(args: argparse.Namespace) -> None:
    """Exactly one of RESULTS and --points; a points table has no experiments or statuses."""
    points = getattr(args, "points", None)
    if args.command in TABLE_COMMANDS and (points is None) == (args.results is None):
        raise ResultsError(f"{args.command}: give RESULTS or --points FILE (exactly one)")
    if points is not None and (args.experiment or getattr(args, "statuses", None)):
        raise ResultsError("--experiment and --status choose trials of a store, not --points")


def _points_run(args: argparse.Namespace, settings: Any) -> Result | Path:
    """scaling or report of a points table."""
    from analysis.scaling.from_table import scaling_points
    from analysis.scaling.table_points import TableColumns

    columns = from_flags(args, TableColumns, COLUMNS, metrics=settings.metrics)
    if args.command == "scaling":
        return scaling_points(args.points, columns, settings)
    from analysis.report import write_points_report

    sca = scaling_points(
        args.points,
        columns,
        n_boot=settings.n_boot,
        level=settings.level,
        n_boot_fit=settings.n_boot_fit,
        budgets=settings.budgets,
        reference=settings.reference,
        compare_at=settings.compare_at,
    )
    return write_points_report(sca, args.points, settings.out, settings.static)


def run(argv: Sequence[str] | None = None, prog: str = PROG) -> tuple[Result | None, str, str]:
    """Parse `argv` and run the command: (result, rendered text, format). Raises ResultsError."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(argv), prog)
    args = parser.parse_args(argv)
    _results_once(parser, args)
    fmt_name = getattr(args, "format", "md")
    spec = COMMANDS[args.command]
    settings = _settings(args, spec)
    _check_inputs(args)
    points = getattr(args, "points", None)
    if not spec.reads_store:
        out = call(settings, "")
    elif points is not None and not spec.opens_source:
        out = _points_run(args, settings)
    else:
        out = call(settings, points or args.results, split_list(args.experiment))
    if isinstance(out, Path):
        return None, f"wrote {out}\n", fmt_name
    return out, render(out, fmt_name), fmt_name


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Entry point; returns the exit status. `prog`: the name usage lines give."""
    try:
        result, text, fmt_name = run(argv, prog)
    except ResultsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    if result is not None and fmt_name == "csv":
        print(text_notes(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
