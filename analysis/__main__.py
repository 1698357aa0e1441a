"""Command line: `python -m analysis {ablation,entropy,scaling,search,power,plateau,predict,report}
RESULTS [options]`; `scaling`, `predict` and `report` also read a points table instead
(`--points FILE`, CSV or Parquet, no RESULTS).

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

from analysis.commands import COMMANDS, TABLE_COMMANDS, Command, call
from analysis.result import FORMATS, Result, render, text_notes
from analysis.settings_flags import add_flags, from_flags, split_list
from records.errors import ResultsError

COLUMNS = "columns."
"""The dest prefix of a points table's column flags (table_points.TableColumns)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, with the options of `command` only (None: none, as for
    `python -m analysis --help`): a command's options come from its settings class, whose module
    imports polars and scipy, so a command line imports its own command's module alone."""
    parser = argparse.ArgumentParser(
        prog="python -m analysis",
        description="Tables, fits and a report from a numsweep results directory.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
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
    p.add_argument(
        "results",
        metavar="RESULTS",
        nargs="?" if spec.points else None,
        help="the results root of a sweep: a path or a URI (s3://bucket/prefix)"
        + (" (or --points FILE)" if spec.points else ""),
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
    )
    return write_points_report(sca, args.points, settings.out, settings.static)


def run(argv: Sequence[str] | None = None) -> tuple[Result | None, str, str]:
    """Parse `argv` and run the command: (result, rendered text, format). Raises ResultsError."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(_command_of(argv)).parse_args(argv)
    fmt_name = getattr(args, "format", "md")
    spec = COMMANDS[args.command]
    settings = _settings(args, spec)
    _check_inputs(args)
    points = getattr(args, "points", None)
    if points is not None and not spec.opens_source:
        out = _points_run(args, settings)
    else:
        out = call(settings, points or args.results, split_list(args.experiment))
    if isinstance(out, Path):
        return None, f"wrote {out}\n", fmt_name
    return out, render(out, fmt_name), fmt_name


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    try:
        result, text, fmt_name = run(argv)
    except ResultsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    if result is not None and fmt_name == "csv":
        print(text_notes(result), file=sys.stderr)
    return 0


def save(
    argv: Sequence[str], stem: str | Path, formats: Sequence[str] = ("md", "json")
) -> Result | None:
    """Run one command once and write it in each format to `stem.<format>` (a study's tables,
    say: the Markdown to read, the JSON to quote from); returns its result (None for report).
    Raises ResultsError as the CLI reports it."""
    result, text, _ = run([*argv, "--format", formats[0]])
    Path(f"{stem}.{formats[0]}").write_text(text)
    for fmt in formats[1:]:
        Path(f"{stem}.{fmt}").write_text(text if result is None else render(result, fmt))
    return result


if __name__ == "__main__":
    sys.exit(main())
