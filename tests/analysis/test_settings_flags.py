"""The command line derived from the settings classes (analysis/settings_flags.py): every field of
every command is a flag with its docstring as help, and a settings object written as flags
(`as_flags`, what a study's index lists) parses back to the same object."""

from __future__ import annotations

import dataclasses

import pytest

from analysis.__main__ import build_parser
from analysis.ablation import AblationSettings
from analysis.ablation_options import PairedOptions
from analysis.commands import COMMANDS, command_line
from analysis.entropy import EntropySettings
from analysis.plateau import PlateauSettings
from analysis.power import PowerSettings
from analysis.report import ReportSettings
from analysis.scaling.predict import PredictSettings
from analysis.scaling.settings import ScalingSettings
from analysis.scaling.table_points import TableColumns
from analysis.search import SearchSettings
from analysis.selection import ValueSpec, parse_value
from analysis.sequential.command import ReplaySettings, SequentialSettings
from analysis.settings_flags import from_flags, options
from records.errors import ResultsError


def parsed(argv: list[str]) -> object:
    """The settings the command line `argv` makes, as `python -m analysis` makes them."""
    args = build_parser(argv[0]).parse_args(argv)
    return from_flags(args, COMMANDS[argv[0]].load("settings"))


# One settings object per command with every kind of field off its default: lists, switches,
# numbers, value specs, a nested settings object, a flag given alone (--plateau).
OFF_DEFAULT = {
    "ablation": AblationSettings(
        metrics=("eval/test/digit_acc", "gen/*"),
        values=(parse_value("final"), parse_value("auc:400-2000"), parse_value("steps_to:0.25")),
        by=("loss", "aux_weight"),
        block=("model",),
        only=("del (distance=False)", "del (alpha=0.01, decay_base=1.02)"),
        baseline="mle",
        statuses=("TERMINATED", "RUNNING"),
        level=0.9,
        correction="bh",
        family="all",
        options=PairedOptions(
            alternative="greater", equivalence=0.02, plateau="", plateau_last=5, min_slope=0.001
        ),
    ),
    "power": PowerSettings(
        delta=0.02,
        values=(parse_value("last:3"),),
        only=("del",),
        alpha=0.025,
        target_power=0.9,
        one_sided=True,
        sesoi=0.01,
        budget_hours=6.5,
    ),
    "scaling": ScalingSettings(
        value=parse_value("step:400"),
        axes=("N", "C"),
        params="total",
        n_boot=500,
        robust=True,
        n_boot_fit=50,
        budgets=(1e21, 3.5e22),
        models=("tiny", "small"),
        gate_only=True,
    ),
    "entropy": EntropySettings(
        pool=("experiment",), split_names=("test", "extra"), correction="none", level=0.99
    ),
    "plateau": PlateauSettings(metrics=("eval/test/ce",), last=5, min_slope=0.5),
    "search": SearchSettings(objectives=("gen/macc:max", "eval/test/ce"), top=3),
    "predict": PredictSettings(
        n=1.5e9, d=3e10, columns=TableColumns(n="params", d="tokens"), n_boot=200, seed=7
    ),
    "report": ReportSettings(out="out/report", plateau=True, n_boot=100, level=0.8),
    "sequential": SequentialSettings(
        looks=4,
        alpha=0.025,
        spending="pocock",
        target_power=0.9,
        no_futility=True,
        sd=0.014,
        sesoi=0.02,
        hypotheses="superiority",
    ),
    "sequential-replay": ReplaySettings(
        metric="eval/test/digit_acc",
        sesoi=0.02,
        value=parse_value("last:3"),
        reference="mle",
        treatments=("del (alpha=0.01)", "del (alpha=0.2)"),
        seeds=(3, 6),
        alpha=0.025,
        spending="pocock",
        target_power=0.9,
        no_futility=True,
        hypotheses="equivalence",
        direction="max",
        by=("loss", "lr"),
    ),
}


@pytest.mark.parametrize("command", sorted(OFF_DEFAULT))
def test_settings_written_as_flags_parse_back_to_themselves(command: str) -> None:
    assert set(OFF_DEFAULT) == set(COMMANDS)
    settings = OFF_DEFAULT[command]
    argv = command_line(command, "results", settings)
    assert parsed(argv) == settings, argv
    # And the defaults are no flags at all (nor a RESULTS for a command that reads none).
    source = ["results"] if COMMANDS[command].reads_store else []
    assert command_line(command, "results", type(settings)(**_required(settings))) == [
        command,
        *source,
        *_required_flags(command, settings),
    ]


def _required(settings: object) -> dict:
    return {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(settings)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }


def _required_flags(command: str, settings: object) -> list[str]:
    return {
        "power": ["--delta", "0.02"],
        "predict": ["--n", "1500000000.0"],
        "sequential-replay": ["--metric", "eval/test/digit_acc", "--sesoi", "0.02"],
    }.get(command, ["--out", "out/report"] if command == "report" else [])


def test_flags_by_hand_make_the_settings_the_flags_name() -> None:
    # Written out by hand from the old command line's documentation, not from as_flags.
    argv = "ablation R --metric a,b --metric c --value final,best --arms x --plateau --all-x"
    with pytest.raises(SystemExit):  # an unknown flag is argparse's error, exit 2
        parsed(argv.split())
    by_hand = [
        "ablation",
        "R",
        "--metric",
        "a,b",
        "--metric",
        "c",
        "--value",
        "final,best",
        "--arms",
        "x",
        "--plateau",
    ]
    got = parsed([*by_hand, "--arms", "del (alpha=0.01, decay_base=1.02)"])
    assert got.metrics == ("a", "b", "c")
    assert got.only == ("x", "del (alpha=0.01, decay_base=1.02)")  # a label's comma stays
    assert got.values == (ValueSpec("final"), ValueSpec("best"))
    assert got.options.plateau == "" and got.options.plateau_last == 3
    assert parsed(["ablation", "R", "--plateau", "eval/test/ce"]).options.plateau == "eval/test/ce"
    assert parsed(["predict", "R", "--n", "1e9", "--n-col", "P"]).columns.n == "P"
    assert parsed(["power", "R", "--delta", "0.1", "--power", "0.9"]).target_power == 0.9


def test_bad_values_name_their_flag() -> None:
    cases = [
        ("scaling R --budgets 1e21,lots", "--budgets: 'lots' is not a number of FLOPs"),
        ("scaling R --at 1e9,big --reference mle", "--at: 'big' is not a number of parameters"),
        ("report R -o x --at 1e9,big", "--at: 'big' is not a number of parameters"),
        ("ablation R --value last", "--value must be one of final, best"),
        ("search R --top 0", "--top must be >= 1"),
        ("report R -o x --bootstrap 0", "--bootstrap must be >= 1"),
        ("power R --delta 0.1 --budget-hours -1", "--budget-hours must be > 0"),
    ]
    for argv, message in cases:
        with pytest.raises(ResultsError, match="^" + message.replace("(", r"\(")[:30]):
            parsed(argv.split())


def _subparser(command: str):
    return build_parser(command)._subparsers._group_actions[0].choices[command]


def test_every_field_is_a_documented_flag() -> None:
    """Each option is written once: a field with a docstring, which is its --help."""
    for name, spec in COMMANDS.items():
        flags = {a.dest: a.help for a in _subparser(name)._actions if a.option_strings and a.help}
        for option in options(spec.load("settings")):
            assert flags.get(option.dest), f"{name}: {option.dest} has no flag with a help text"
    text = " ".join(_subparser("ablation").format_help().split())
    assert "--arms LABEL Only these arms and their baselines: a family of tests" in text
    assert "--plateau [METRIC] Metric of the plateau check" in text
    assert "(--arms)" not in text  # the flag the docstring names is left out of its help
