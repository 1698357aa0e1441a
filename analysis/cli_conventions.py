"""What numsweep's two command lines (`numsweep`, `python -m analysis`) share, as Ray's and
Optuna's CLIs do: `--version`, and help that shows each option's default and its choices.

argparse's own `ArgumentDefaultsHelpFormatter` prints "(default: None)" and "(default: False)"
for every optional flag and switch, and a metavar (`--correction CORRECTION`) hides an option's
choices; `ConventionalParser` adds to each option's help its default, only where there is one,
and the choices a metavar hides, unless the help text already names them all.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Iterable
from typing import Any

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


def described(
    text: str | None, default: object, choices: Iterable[object] | None, metavar: str | None
) -> str | None:
    """An option's help with its default (where it has one) and the choices a metavar hides
    (unless the text names them all) added."""
    if text == argparse.SUPPRESS:
        return text
    text = text or ""
    names = [str(c) for c in choices or ()]
    if names and metavar is not None and not all(c in text for c in names):
        text += f" (choices: {', '.join(names)})"
    if shown_default(default) is not None and "default" not in text:
        text += " (default: %(default)s)"
    return text


class ConventionalParser(argparse.ArgumentParser):
    """An `ArgumentParser` whose options' help says their defaults and hidden choices.
    (argparse's formatters are public by name only, their methods an implementation detail,
    so this is done where an option is added.)"""

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        if names and names[0].startswith(self.prefix_chars):
            kwargs["help"] = described(
                kwargs.get("help"),
                kwargs.get("default"),
                kwargs.get("choices"),
                kwargs.get("metavar"),
            )
        return super().add_argument(*names, **kwargs)
