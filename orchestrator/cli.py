"""Command line: `numsweep sweep CONFIG` (also `python -m orchestrator sweep CONFIG`).

Exit codes: 0 done, 1 some trials failed, 2 bad input (nothing launched, nothing written).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator.sweep_file import SweepFileError, load_sweep


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="numsweep", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sweep = sub.add_parser("sweep", help="run a sweep file on Ray (local or a cluster)")
    sweep.add_argument("config", help="sweep YAML file")
    sweep.add_argument("overrides", nargs="*", help="dotted overrides, e.g. train.lr=3e-4")
    sweep.add_argument("--results", default="results", help="results root (default ./results)")
    sweep.add_argument("--name", help="experiment name (default: the file's `experiment`)")
    sweep.add_argument(
        "--address", help="Ray address (default: RAY_ADDRESS, else a local instance)"
    )
    return parser


def _results_root(value: str) -> str:
    return value if "://" in value else str(Path(value).expanduser().resolve())


def cmd_sweep(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if args.name:
        overrides.append(f"experiment={args.name}")
    try:
        sweep = load_sweep(args.config, overrides)
    except SweepFileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from orchestrator.preflight import preflight

    try:
        checks = preflight(sweep)
    except (ValueError, FileNotFoundError, OSError) as err:
        print(f"error: {args.config}: {err}", file=sys.stderr)
        return 2
    print(f"numsweep: {sweep.experiment}: " + ", ".join(f"{k} {v}" for k, v in checks.items()))

    from orchestrator.driver import concurrency, run_sweep
    from orchestrator.local_ray import cluster_capacity, connect

    how = connect(args.address)
    try:
        max_concurrent = concurrency(sweep, cluster_capacity())
    except ValueError as err:
        print(f"error: {args.config}: {err}", file=sys.stderr)
        return 2
    root = _results_root(args.results)
    print(f"numsweep: Ray ({how}), {max_concurrent} trial(s) at a time, results in {root}")
    outcome = run_sweep(sweep, root, max_concurrent=max_concurrent)

    from analysis.__main__ import main as analysis_main

    print()
    analysis_main(
        ["ablation", root, "--experiment", sweep.experiment, "--status", "TERMINATED,ERROR"]
    )
    print(
        f"\n{outcome.n_trials} trials, {outcome.n_errors} failed. Results: {root}\n"
        "Next:\n"
        f"  python -m analysis ablation {root} --experiment {sweep.experiment}\n"
        f"  python -m analysis entropy {root}\n"
        f"  python -m analysis report {root} -o {root}/report\n"
    )
    return 1 if outcome.n_errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if args.command == "sweep":
        return cmd_sweep(args)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
