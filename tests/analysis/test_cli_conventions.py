"""analysis.cli_conventions and the help it shapes (issue 60): every option of both command
lines (`numsweep …`, `python -m analysis …`) says its default and its choices in the command
line's words. Before, `--correction CORRECTION` hid its choices, `--alternative` named none,
defaults were absent (argparse saw None for every settings flag), and help leaked field names
and Python values ("None: no TOST", "`all_metrics`")."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from analysis.__main__ import build_parser
from analysis.cli_conventions import ConventionalParser
from analysis.commands import COMMANDS
from orchestrator.cli import build_parser as numsweep_parser


def printed_help(parser, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args([*argv, "--help"])
    return out.getvalue()


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    """Each analysis command's help and each numsweep command's, as printed."""
    texts = {f"analysis {n}": printed_help(build_parser(n), [n]) for n in COMMANDS}
    numsweep = numsweep_parser()
    texts |= {f"numsweep {n}": printed_help(numsweep, [n]) for n in numsweep.commands}
    return texts


def option_help(text: str, flag: str) -> str:
    """The help of option `flag` in a printed help, joined onto one line."""
    match = re.search(rf"^  {re.escape(flag)}\b.*?(?=^  -|\Z)", text, re.M | re.S)
    assert match, (flag, text)
    return " ".join(match[0].split())


def test_no_python_names_in_any_help(helps):
    assert len(helps) == len(COMMANDS) + 6
    for name, text in helps.items():
        assert "`" not in text, (name, re.findall(r".*`.*", text))
        assert not re.search(r"\bNone\b", text), (name, re.findall(r".*\bNone\b.*", text))
        assert "(default: False)" not in text, name


def test_the_options_issue_60_named(helps):
    ablation = helps["analysis ablation"]
    assert "default: no TOST" in option_help(ablation, "--equivalence")
    assert "every held-out metric with --all" in option_help(ablation, "--metrics")
    assert "(choices: two-sided, greater, less; default: two-sided)" in option_help(
        ablation, "--alternative"
    )
    assert "holm, bh, none (default: holm)" in option_help(ablation, "--correction")
    assert "(default: 0.95)" in option_help(ablation, "--level")
    assert "(default: mle)" in option_help(ablation, "--baseline")
    assert "--plateau [METRIC] Metric of the plateau check; given alone:" in option_help(
        ablation, "--plateau"
    )
    assert "(default: table)" in option_help(helps["numsweep status"], "--format")
    assert "(default: results)" in option_help(helps["numsweep sweep"], "--results")


def test_the_formatter_adds_what_argparse_hides_and_nothing_it_would_invent():
    parser = ConventionalParser(prog="p")
    parser.add_argument("--pick", metavar="P", choices=("a", "b"), default="a", help="a pick")
    parser.add_argument("--named", metavar="N", choices=("x", "y"), help="x or y")
    parser.add_argument("--unset", help="nothing by default")
    parser.add_argument("--switch", action="store_true", help="on or off")
    parser.add_argument("--said", default=3, help="three (default: three)")
    text = parser.format_help()
    assert option_help(text, "--pick") == "--pick P a pick (choices: a, b) (default: a)"
    assert option_help(text, "--named") == "--named N x or y"
    assert option_help(text, "--unset") == "--unset UNSET nothing by default"
    assert option_help(text, "--switch") == "--switch on or off"
    assert option_help(text, "--said") == "--said SAID three (default: three)"
