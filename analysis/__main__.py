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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from analysis.option_choices import (
    AGGREGATES,
    ALTERNATIVES,
    CORRECTION_FAMILIES,
    CORRECTIONS,
    LR_MODES,
)
from analysis.result import FORMATS, Result, render, text_notes
from analysis.selection import VALUE_HELP
from records.errors import ResultsError
from records.reader import Store, open_store

T = TypeVar("T")
R = TypeVar("R")


def _split_list(values: Sequence[str] | None) -> list[str]:
    """Repeated and comma-separated option values, flattened."""
    return [v.strip() for item in values or () for v in item.split(",") if v.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m analysis",
        description="Tables, fits and a report from a numsweep results directory.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _ablation_args(
        _add_command(
            sub,
            "ablation",
            "per-loss tables of held-out metrics: mean ± CI over seeds, paired tests",
        )
    )
    _entropy_args(
        _add_command(sub, "entropy", "digit entropy and digit accuracy over training per loss")
    )
    _scaling_args(
        _add_command(
            sub, "scaling", "plain and saturating power-law fits, CE-vs-EE verdict, EE share of CE"
        )
    )
    _search_args(_add_command(sub, "search", "best trials, parameter importance, Pareto front"))
    _power_args(
        _add_command(
            sub, "power", "seeds needed per arm vs baseline, from a pilot's paired differences"
        )
    )
    _plateau_args(
        _add_command(
            sub, "plateau", "per arm: is the metric still improving over the last evaluations?"
        )
    )
    _predict_args(
        _add_command(
            sub,
            "predict",
            "the value a planned run (N, D) will give, with a prediction interval and the "
            "held-out check that says whether to trust it",
        )
    )
    _report_args(
        _add_command(
            sub, "report", "all of the above as one static HTML page with figures and table files"
        )
    )
    return parser


TABLE_COMMANDS = ("scaling", "predict", "report")
"""Commands that also read a points table (--points FILE) instead of RESULTS."""


def _add_points(p: argparse.ArgumentParser, n_option: str, d_option: str) -> None:
    """--points FILE and the options naming its columns (table_points.TableColumns)."""
    g = p.add_argument_group("a points table instead of RESULTS")
    g.add_argument(
        "--points",
        metavar="FILE",
        help="a CSV or Parquet table of (N, D, metric) rows made anywhere (a paper's points, "
        "runs logged elsewhere) to fit instead of a results store",
    )
    g.add_argument(n_option, dest="n_col", default="N", metavar="COL", help="--points: N column")
    g.add_argument(
        d_option,
        dest="d_col",
        metavar="COL",
        help="--points: D (tokens) column (default: D where the table has one)",
    )
    g.add_argument(
        "--seed-column",
        metavar="COL",
        help="--points: rows equal but for this column are seeds of one configuration",
    )
    g.add_argument("--group", metavar="COL", help="--points: a column splitting separate fits")
    g.add_argument(
        "--flops", metavar="COL", help="--points: training FLOPs column (default C = 6·N·D)"
    )
    if n_option == "--n":  # scaling and report: the joint fit's allocation
        p.add_argument(
            "--budgets",
            action="append",
            metavar="C,C,...",
            help="compute budgets (FLOPs) for the joint fit's compute-optimal N*, D* (default: "
            "the data's largest C, 10× and 100× it)",
        )


def _add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_text: str
) -> argparse.ArgumentParser:
    """The subcommand `name` with the options every command has."""
    # help strings are %-formatted by argparse, descriptions are not
    p = sub.add_parser(name, help=help_text, description=help_text.replace("%%", "%"))
    p.add_argument(
        "results",
        metavar="RESULTS",
        nargs="?" if name in TABLE_COMMANDS else None,
        help="the results root of a sweep: a path or a URI (s3://bucket/prefix)"
        + (" (or --points FILE)" if name in TABLE_COMMANDS else ""),
    )
    p.add_argument(
        "--experiment",
        action="append",
        metavar="E",
        help="experiment(s) to analyse (repeatable; default: all in RESULTS)",
    )
    p.add_argument(
        "--status",
        action="append",
        metavar="S",
        help="trial statuses to include, e.g. TERMINATED,RUNNING (default: TERMINATED; "
        "entropy curves also take RUNNING trials)",
    )
    if name != "report":
        p.add_argument("--format", choices=FORMATS, default="md", help="output format")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of every interval")
    return p


def _add_metrics(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--metrics",
        "--metric",
        dest="metrics",
        action="append",
        metavar="M",
        help=f"metric names or globs, repeatable or comma-separated (default: {default})",
    )


def _add_correction(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="holm",
        help="multiple-comparison correction of the paired tests' p-values",
    )
    p.add_argument(
        "--family",
        choices=CORRECTION_FAMILIES,
        default="table",
        help="what one correction covers: every test of a table, of a metric column, or all",
    )


def _add_values(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--value",
        action="append",
        help=f"which value of a trial counts: {VALUE_HELP} (repeatable or comma-separated; "
        "default: final)",
    )


def _add_arm_columns(p: argparse.ArgumentParser) -> None:
    """--by, --pool, --block: how trials form arms (every arm command)."""
    p.add_argument(
        "--by",
        action="append",
        help="configuration column(s) that define the rows (repeatable; default: loss)",
    )
    p.add_argument(
        "--pool",
        action="append",
        help="configuration column(s) that may differ within a row (repeatable), e.g. "
        "experiment for one study run as several experiments",
    )
    p.add_argument(
        "--block",
        action="append",
        help="configuration column(s) whose values are blocks (repeatable), e.g. model: an arm "
        "pools them, a unit is a block value and a seed, paired tests match units",
    )


def _add_paired_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--alternative",
        choices=ALTERNATIVES,
        default="two-sided",
        help="alternative of the paired t-tests on mean(arm − baseline) (default two-sided)",
    )
    p.add_argument(
        "--equivalence",
        type=float,
        metavar="SESOI",
        help="also a TOST per paired test: equivalent iff the 1−2α interval lies in ±SESOI",
    )
    p.add_argument(
        "--adjust-for",
        metavar="METRIC",
        help="paired ANCOVA: the difference at matched METRIC (e.g. digit entropy at "
        "matched digit accuracy), with the slope",
    )
    p.add_argument(
        "--plateau",
        nargs="?",
        const="",
        metavar="METRIC",
        help="plateau check: flag (†) arms still learning in METRIC (default: the first "
        "chosen metric with a direction) and add the slope table",
    )
    _add_plateau_window(p, "--plateau-last")


def _add_plateau_window(p: argparse.ArgumentParser, flag: str) -> None:
    p.add_argument(
        flag,
        type=int,
        default=3,
        metavar="K",
        help="plateau slope over the last K evaluations (default 3)",
    )
    p.add_argument(
        "--min-slope",
        type=float,
        default=0.0,
        help="improvement per 1000 steps the slope's interval must exceed to flag (default 0)",
    )


def _ablation_args(p: argparse.ArgumentParser) -> None:
    _add_metrics(p, "the headline metrics of every split")
    p.add_argument(
        "--all", action="store_true", help="every held-out metric (eval/*, gen/*) in the store"
    )
    _add_values(p)
    _add_arm_columns(p)
    _add_paired_options(p)
    p.add_argument(
        "--arms",
        action="append",
        metavar="LABEL",
        help="only these arms (by label, repeatable) and their baseline: a family of paired "
        "tests of its own",
    )
    p.add_argument(
        "--baseline",
        default="mle",
        help="loss the paired tests compare against, or one arm's label, e.g. "
        "'del (distance=False)'",
    )
    _add_correction(p)


def _entropy_args(p: argparse.ArgumentParser) -> None:
    _add_arm_columns(p)
    p.add_argument("--baseline", default="mle", help="loss the final values are compared with")
    p.add_argument("--split", action="append", help="evaluation split(s) (default: all)")
    _add_correction(p)


def _scaling_args(p: argparse.ArgumentParser) -> None:
    _add_metrics(p, "CE, EE, SA and log-confidence of every split")
    p.add_argument(
        "--axis",
        action="append",
        help="N (parameters), D (tokens seen), C (6·N·D); repeatable or comma-separated "
        "(default: N, and D, C when tokens seen vary across sizes)",
    )
    p.add_argument(
        "--params", choices=("non_embedding", "total"), default="non_embedding", help="N to use"
    )
    p.add_argument("--value", default="final", help=f"{VALUE_HELP} (default: final)")
    p.add_argument("--by", action="append", help="group columns besides dataset/split")
    p.add_argument(
        "--aggregate",
        choices=AGGREGATES,
        default="size",
        help="size: fit the per-size means over seeds (default); trial: every trial a point",
    )
    p.add_argument(
        "--lr",
        choices=LR_MODES,
        default="best",
        help="when the learning rate varies: best = per size only the best lr's trials "
        "(default), pool = average over all",
    )
    p.add_argument(
        "--select-by",
        metavar="METRIC",
        help="metric that picks the best learning rate (default: eval/<first split>/ce)",
    )
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument(
        "--robust",
        action="store_true",
        help="also the saturating form by Huber loss on log residuals (grid of starts, bootstrap "
        "over (size, seed) units) and CE vs EE by a paired bootstrap of prediction errors (slow)",
    )
    p.add_argument(
        "--fit-bootstrap",
        type=int,
        help="bootstrap resamples of --robust's intervals (each refits every form; default: 100 "
        "for a store, 1000 for --points)",
    )
    p.add_argument(
        "--gate",
        action="store_true",
        help="only the sanity gate: held-out CE falls with N (adjacent sizes by more than two "
        "pooled seed sds) and every size's best lr lies inside its grid",
    )
    p.add_argument(
        "--pool-experiments",
        action="store_true",
        help="fit the experiments read as one family (an lr grid and its extensions, say), "
        "not one group per experiment",
    )
    p.add_argument(
        "--models",
        action="append",
        metavar="PRESET",
        help="only these model presets (repeatable or comma-separated; default: every size)",
    )
    _add_points(p, "--n", "--d")


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--objective",
        action="append",
        help="METRIC[:max|min] (repeatable: several give a Pareto front; default: gen/macc)",
    )
    p.add_argument("--value", default="final", help=f"{VALUE_HELP} (default: final)")
    p.add_argument("--top", type=int, default=10, help="how many best trials to list")


def _power_args(p: argparse.ArgumentParser) -> None:
    _add_metrics(p, "the headline metrics of every split")
    _add_values(p)
    _add_arm_columns(p)
    p.add_argument("--arms", action="append", metavar="LABEL", help="only these arms")
    p.add_argument("--baseline", default="mle", help="loss or arm label compared against")
    p.add_argument(
        "--delta", type=float, required=True, help="true difference to detect (metric units)"
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--power", type=float, default=0.8, help="power wanted (default 0.8)")
    p.add_argument("--one-sided", action="store_true", help="plan a one-sided paired t-test")
    p.add_argument(
        "--sesoi", type=float, help="equivalence margin of the TOST plan (default: --delta)"
    )
    p.add_argument(
        "--budget-hours",
        type=float,
        help="wall hours the study may take at the pilot's concurrency; each plan says if it fits",
    )


def _plateau_args(p: argparse.ArgumentParser) -> None:
    _add_metrics(p, "the first headline metric with a better direction")
    _add_arm_columns(p)
    _add_plateau_window(p, "--last")


def _predict_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=float, required=True, help="planned parameters N")
    p.add_argument("--d", type=float, help="planned tokens D (when the points vary in D)")
    p.add_argument(
        "--metric",
        metavar="M",
        help="a table's metric column (default: loss) or a store's metric (default: "
        "eval/<first split>/ce)",
    )
    p.add_argument("--params", choices=("non_embedding", "total"), default="non_embedding")
    p.add_argument(
        "--fit-bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)"
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    _add_points(p, "--n-col", "--d-col")


def _report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--objective", action="append", help="search objective(s), as for search")
    p.add_argument("--params", choices=("non_embedding", "total"), default="non_embedding")
    p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
    p.add_argument(
        "--plateau", action="store_true", help="plateau check in the ablation section (†)"
    )
    _add_metrics(p, "--points: loss")
    p.add_argument(
        "--fit-bootstrap", type=int, help="--points: resamples of the fits' intervals (1000)"
    )
    _add_points(p, "--n", "--d")


def _parse_or_exit(parse: Callable[[T], R], text: T) -> R:
    """Option values that fail to parse are bad input (exit 2), like unknown names."""
    try:
        return parse(text)
    except ValueError as err:
        raise ResultsError(str(err)) from err


# One function per command: its settings and call from the parsed options and what `run`
# prepared for every command (`arms`: how trials form arms; `statuses`: the status filter as
# keyword arguments, empty for the default).


def _paired(args: argparse.Namespace, arms: dict[str, list[str]]) -> dict[str, Any]:
    """The paired commands' (ablation, power) arm options: arms, which, baseline, values."""
    from analysis.selection import parse_values

    values = _parse_or_exit(parse_values, args.value or ["final"])
    return {**arms, "only": list(args.arms or []), "baseline": args.baseline, "values": values}


def _run_ablation(
    args: argparse.Namespace,
    store: Store,
    paired: dict[str, Any],
    level: float,
    statuses: dict[str, list[str]],
) -> Result:
    from analysis.ablation import AblationSettings, ablation
    from analysis.ablation_options import PairedOptions

    if args.all and args.metrics:
        raise ResultsError("--all and --metrics: give one of them")
    settings = AblationSettings(
        metrics=_split_list(args.metrics) or None,
        all_metrics=args.all,
        **paired,
        level=level,
        correction=args.correction,
        family=args.family,
        options=PairedOptions(
            alternative=args.alternative,
            equivalence=args.equivalence,
            adjust_for=args.adjust_for,
            plateau=args.plateau,
            plateau_last=args.plateau_last,
            min_slope=args.min_slope,
        ),
        **statuses,
    )
    return ablation(store, settings)


def _run_power(
    args: argparse.Namespace,
    store: Store,
    paired: dict[str, Any],
    level: float,
    statuses: dict[str, list[str]],
) -> Result:
    from analysis.power import PowerSettings, power

    settings = PowerSettings(
        delta=args.delta,
        metrics=_split_list(args.metrics) or None,
        **paired,
        level=level,
        alpha=args.alpha,
        target_power=args.power,
        one_sided=args.one_sided,
        sesoi=args.sesoi,
        budget_hours=args.budget_hours,
        **statuses,
    )
    return power(store, settings)


def _run_entropy(
    args: argparse.Namespace,
    store: Store,
    arms: dict[str, list[str]],
    level: float,
    statuses: dict[str, list[str]],
) -> Result:
    from analysis.entropy import EntropySettings, entropy

    settings = EntropySettings(
        **arms,
        baseline=args.baseline,
        split_names=_split_list(args.split) or None,
        level=level,
        correction=args.correction,
        family=args.family,
        **statuses,
    )
    return entropy(store, settings)


def _run_plateau(
    args: argparse.Namespace,
    store: Store,
    arms: dict[str, list[str]],
    level: float,
    statuses: dict[str, list[str]],
) -> Result:
    from analysis.plateau import PlateauSettings, plateau

    settings = PlateauSettings(
        metrics=_split_list(args.metrics) or None,
        last=args.last,
        **arms,
        level=level,
        min_slope=args.min_slope,
        **statuses,
    )
    return plateau(store, settings)


def _run_scaling(
    args: argparse.Namespace,
    store: Store,
    by: list[str],
    level: float,
    statuses: dict[str, list[str]],
) -> Result:
    from analysis.scaling import ScalingSettings, scaling
    from analysis.selection import parse_value

    settings = ScalingSettings(
        metrics=_split_list(args.metrics) or None,
        axes=_split_list(args.axis) or None,
        params=args.params,
        value=_parse_or_exit(parse_value, args.value),
        by=tuple(by),
        aggregate=args.aggregate,
        lr=args.lr,
        select_by=args.select_by,
        n_boot=args.bootstrap,
        seed=args.seed,
        level=level,
        robust=args.robust,
        n_boot_fit=args.fit_bootstrap,
        gate_only=args.gate,
        pool_experiments=args.pool_experiments,
        models=_split_list(args.models) or None,
        budgets=_budgets(args.budgets),
        **statuses,
    )
    if store is None:
        from analysis.scaling.from_table import scaling_points

        return scaling_points(args.points, _columns(args, _split_list(args.metrics)), settings)
    return scaling(store, settings)


def _budgets(values: Sequence[str] | None) -> tuple[float, ...] | None:
    """--budgets as FLOPs (None when not given); a value that is not a number exits 2."""
    out = []
    for text in _split_list(values):
        try:
            out.append(float(text))
        except ValueError:
            raise ResultsError(f"--budgets: {text!r} is not a number of FLOPs") from None
    return tuple(out) or None


def _columns(args: argparse.Namespace, metrics: list[str]) -> Any:
    """A points table's columns from --n/--n-col, --d/--d-col, --metric, --seed-column, --group
    and --flops."""
    from analysis.scaling.table_points import TableColumns

    return TableColumns(
        n=args.n_col,
        d=args.d_col,
        metrics=tuple(metrics) or None,
        seed=args.seed_column,
        group=args.group,
        flops=args.flops,
    )


def _run_predict(args: argparse.Namespace, statuses: dict[str, list[str]], level: float) -> Result:
    from analysis.scaling.predict import PredictSettings, predict

    source = args.points or args.results
    table = args.points is not None
    settings = PredictSettings(
        n=args.n,
        d=args.d,
        columns=_columns(args, [args.metric] if table and args.metric else []),
        metric=None if table else args.metric,
        params=args.params,
        n_boot=args.fit_bootstrap,
        seed=args.seed,
        level=level,
        experiments=tuple(_split_list(args.experiment)) or None,
        **{k: tuple(v) for k, v in statuses.items()},
    )
    return predict(source, settings)


def _run_search(args: argparse.Namespace, store: Store, statuses: dict[str, list[str]]) -> Result:
    from analysis.search import search
    from analysis.selection import parse_value

    return search(
        store,
        objectives=_split_list(args.objective),
        value=_parse_or_exit(parse_value, args.value),
        top=args.top,
        **statuses,
    )


def _run_report(
    args: argparse.Namespace, store: Store | None, level: float, statuses: dict[str, list[str]]
) -> Path:
    """Write the report; the page's path."""
    from analysis.report import write_points_report, write_report
    from analysis.selection import FINAL

    if args.bootstrap < 1:
        raise ResultsError(f"--bootstrap must be >= 1, got {args.bootstrap}")
    if store is None:
        from analysis.scaling.from_table import scaling_points

        sca = scaling_points(
            args.points,
            _columns(args, _split_list(args.metrics)),
            n_boot=args.bootstrap,
            level=level,
            n_boot_fit=args.fit_bootstrap,
            budgets=_budgets(args.budgets),
        )
        return write_points_report(sca, args.points, args.out)
    return write_report(
        store,
        args.out,
        objectives=_split_list(args.objective),
        params=args.params,
        n_boot=args.bootstrap,
        value=FINAL,
        level=level,
        plateau=args.plateau,
        **statuses,
    )


def _open(args: argparse.Namespace) -> Store | None:
    """The results store, or None for a command given a points table (or predict, which opens
    its own); exactly one of RESULTS and --points."""
    points = getattr(args, "points", None)
    if args.command in TABLE_COMMANDS and (points is None) == (args.results is None):
        raise ResultsError(f"{args.command}: give RESULTS or --points FILE (exactly one)")
    if points is not None:
        if args.experiment or args.status:
            raise ResultsError("--experiment and --status choose trials of a store, not --points")
        return None
    if args.command == "predict":
        return None
    return open_store(args.results, _split_list(args.experiment) or None)


def run(argv: Sequence[str] | None = None) -> tuple[Result | None, str, str]:
    """Parse `argv` and run the command: (result, rendered text, format). Raises ResultsError."""
    args = build_parser().parse_args(argv)
    fmt_name = getattr(args, "format", "md")
    from analysis.seed_stats import check_level

    level = _parse_or_exit(check_level, args.level)
    store = _open(args)
    statuses = {"statuses": _split_list(args.status)} if args.status else {}
    by = _split_list(getattr(args, "by", None)) or ["loss"]
    pool = _split_list(getattr(args, "pool", None))
    block = _split_list(getattr(args, "block", None))
    arms = {"by": by, "pool": pool, "block": block}  # how trials form arms: every arm command
    if args.command == "ablation":
        result = _run_ablation(args, store, _paired(args, arms), level, statuses)
    elif args.command == "power":
        result = _run_power(args, store, _paired(args, arms), level, statuses)
    elif args.command == "plateau":
        result = _run_plateau(args, store, arms, level, statuses)
    elif args.command == "entropy":
        result = _run_entropy(args, store, arms, level, statuses)
    elif args.command == "scaling":
        result = _run_scaling(args, store, by, level, statuses)
    elif args.command == "predict":
        result = _run_predict(args, statuses, level)
    elif args.command == "search":
        result = _run_search(args, store, statuses)
    else:
        page = _run_report(args, store, level, statuses)
        return None, f"wrote {page}\n", fmt_name
    return result, render(result, fmt_name), fmt_name


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
