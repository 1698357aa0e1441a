"""What numsweep's two command lines (`numsweep`, `python -m analysis`) share, as Ray's and
Optuna's CLIs do: `--version`, and help that shows each option's default and its choices.

argparse's own `ArgumentDefaultsHelpFormatter` prints "(default: None)" and "(default: False)"
for every optional flag and switch, and a metavar (`--correction CORRECTION`) hides an option's
choices; `HelpFormatter` shows a default only where there is one and lists the choices a
metavar hides, unless the help text already names them all.
"""

from __future__ import annotations

import argparse
import importlib.metadata

DISTRIBUTION = "numsweep"


def version() -> str:
    """numsweep's installed version ("unknown" when run from a tree that was never installed)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def add_version(parser: argparse.ArgumentParser) -> None:
    """`--version`: prints `<prog> <version>` and exits 0."""
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")


def shown_default(default: object) -> str | None:
    """A default as help text shows it; None where there is nothing to show (an unset option,
    an off switch, an empty list)."""
    if default is None or default is False or default == argparse.SUPPRESS:
        return None
    if isinstance(default, list | tuple):
        return ",".join(str(v) for v in default) or None
    return str(default)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with each option's default and hidden choices added to its help."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.help == argparse.SUPPRESS:
            return action.help
        choices = [str(c) for c in action.choices or ()]
        if choices and action.metavar is not None and not all(c in text for c in choices):
            text += f" (choices: {', '.join(choices)})"
        default = shown_default(action.default)
        if default is not None and "default" not in text and action.option_strings:
            text += " (default: %(default)s)"
        return text
