"""The analysis commands as a library: each command's settings class and function, the call
behind a command line (`call(settings, results)`), and the command line that remakes a call
(`command_line`), which a study's index.txt lists. `python -m analysis` (analysis/__main__.py)
parses its flags into the same settings objects (analysis/settings_flags.py)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from analysis.result import Result
from analysis.settings_flags import as_flags, split_list
from records.reader import open_store


@dataclass(frozen=True)
class Command:
    """One command: what it makes, its settings class and the function it runs (each
    "module:name"); its options are its settings' fields (analysis/settings_flags.py)."""

    help: str
    settings: str
    function: str
    points: bool = False
    """Also reads a points table (--points FILE) instead of RESULTS."""
    opens_source: bool = False
    """The function opens RESULTS (or a points table) itself, reading the experiments from its
    settings' `experiments`, instead of taking an open store."""
    reads_store: bool = True
    """False: the command reads no RESULTS (a design's boundaries); its function takes the
    settings alone."""

    def load(self, which: str) -> Any:
        module, name = getattr(self, which).split(":")
        return getattr(importlib.import_module(module), name)


COMMANDS = {
    "ablation": Command(
        "per-loss tables of held-out metrics: mean ± CI over seeds, paired tests",
        "analysis.ablation:AblationSettings",
        "analysis.ablation:ablation",
    ),
    "entropy": Command(
        "digit entropy and digit accuracy over training per loss",
        "analysis.entropy:EntropySettings",
        "analysis.entropy:entropy",
    ),
    "scaling": Command(
        "plain and saturating power-law fits, CE-vs-EE verdict, EE share of CE",
        "analysis.scaling.settings:ScalingSettings",
        "analysis.scaling:scaling",
        points=True,
    ),
    "search": Command(
        "best trials, parameter importance, Pareto front",
        "analysis.search:SearchSettings",
        "analysis.search:search",
    ),
    "power": Command(
        "seeds needed per arm vs baseline, from a pilot's paired differences",
        "analysis.power:PowerSettings",
        "analysis.power:power",
    ),
    "plateau": Command(
        "per arm: is the metric still improving over the last evaluations?",
        "analysis.plateau:PlateauSettings",
        "analysis.plateau:plateau",
    ),
    "predict": Command(
        "the value a planned run (N, D) will give, with a prediction interval and the held-out "
        "check that says whether to trust it",
        "analysis.scaling.predict:PredictSettings",
        "analysis.scaling.predict:predict",
        points=True,
        opens_source=True,
    ),
    "sequential": Command(
        "group-sequential boundaries on the z scale and, from a spread, seeds against the fixed "
        "design's",
        "analysis.sequential.command:SequentialSettings",
        "analysis.sequential.command:sequential",
        reads_store=False,
    ),
    "sequential-replay": Command(
        "where a sequential design would have stopped on a store already run, and its cost",
        "analysis.sequential.command:ReplaySettings",
        "analysis.sequential.command:sequential_replay",
    ),
    "report": Command(
        "all of the above as one static HTML page with figures and table files",
        "analysis.report:ReportSettings",
        "analysis.report:write_report",
        points=True,
    ),
}
TABLE_COMMANDS = tuple(name for name, c in COMMANDS.items() if c.points)
"""Commands that also read a points table (--points FILE) instead of RESULTS."""


def command_of(settings: Any) -> str:
    """The command whose settings class `settings` is an instance of."""
    for name, spec in COMMANDS.items():
        if spec.settings == f"{type(settings).__module__}:{type(settings).__name__}":
            return name
    raise TypeError(f"{type(settings).__name__} is no analysis command's settings")


def call(settings: Any, results: str, experiments: Sequence[str] = ()) -> Result | Path:
    """The analysis library's call behind a command line: `settings`' command on the results
    store at `results` (a path or URI), its `experiments` (empty: all); a command that reads no
    store ignores both. The report command returns the page's path, every other command its
    result. Raises ResultsError."""
    spec = COMMANDS[command_of(settings)]
    if not spec.reads_store:
        return spec.load("function")(settings)
    chosen = split_list(experiments)
    if spec.opens_source:
        chosen_here = replace(settings, experiments=tuple(chosen) or settings.experiments)
        return spec.load("function")(results, chosen_here)
    return spec.load("function")(open_store(results, chosen or None), settings)


def command_line(
    command: str, source: str, settings: Any, experiments: Sequence[str] = ()
) -> list[str]:
    """The `python -m analysis` arguments that run `command` on `source` (RESULTS) with
    `settings` (each field off its default a flag): what a study's index lists. A command that
    reads no store takes neither `source` nor experiments."""
    if not COMMANDS[command].reads_store:
        return [command, *as_flags(settings)]
    picked = [arg for e in experiments for arg in ("--experiment", e)]
    return [command, source, *picked, *as_flags(settings)]
