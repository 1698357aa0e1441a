"""The docs' tables that are derived from the loss registry: the losses with their parameters
(from each loss's parameter model and `definition`; in README.md) and the trials table's columns
(from `records.layout.trials_schema` over the registry's parameter columns; in
docs/results-store.md).

    python -m trainables.losses.docs                 # print the generated blocks
    python -m trainables.losses.docs --write README.md docs/results-store.md   # = make docs

Each block sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; a file may hold any
of them, and the files written together must hold every one. A test keeps the committed blocks
equal to what this module generates.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from records.layout import trials_schema
from trainables.losses.registry import LOSSES, loss_params, param_columns


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _value(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else f"{value:g}"


def loss_table() -> str:
    """Markdown: one row per registered loss (its parameters with defaults, its definition),
    then one row per parameter (default, allowed values, meaning)."""
    lines = ["| name | parameters | definition |", "|---|---|---|"]
    for name, cls in LOSSES.items():
        params = ", ".join(f"`{p}` {_value(s.default)}" for p, s in loss_params(name).items())
        inputs = ", ".join(f"`{i}` (from the model)" for i in cls.required_inputs)
        listed = ", ".join(x for x in (params, inputs) if x)
        lines.append(f"| `{name}` | {listed} | {_cell(cls.definition)} |")
    lines += ["", "| parameter | default | allowed | meaning |", "|---|---|---|---|"]
    for name in LOSSES:
        for spec in loss_params(name).values():
            allowed = spec.allowed.replace("inf", "∞")
            lines.append(
                f"| `{spec.qualified}` | {_value(spec.default)} | {allowed} | {_cell(spec.doc)} |"
            )
    return "\n".join(lines)


def trials_columns() -> str:
    """Markdown: the trials table's columns and Arrow types, parameter columns included."""
    schema = trials_schema(param_columns())
    return ", ".join(f"`{f.name}: {f.type}`" for f in schema)


BLOCKS = {"loss-table": loss_table, "trials-columns": trials_columns}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} -->)\n(.*?)\n?(<!-- end: {re.escape(name)} -->)",
        re.S,
    )


def readme_blocks(text: str) -> dict[str, str]:
    """The generated blocks found in a Markdown file's text, by name."""
    return {
        name: found.group(2)
        for name in BLOCKS
        if (found := _pattern(name).search(text)) is not None
    }


def render(text: str) -> str:
    """`text` with every generated block it holds replaced by its current content; ValueError
    when it holds none."""
    if not readme_blocks(text):
        raise ValueError(
            f"no block '<!-- generated: NAME -->' … '<!-- end: NAME -->' ({', '.join(BLOCKS)})"
        )
    for name, make in BLOCKS.items():
        text = _pattern(name).sub(
            lambda m, make=make: f"{m.group(1)}\n{make()}\n{m.group(3)}", text
        )
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write", type=Path, nargs="+", help="replace the generated blocks in these files"
    )
    args = parser.parse_args(argv)
    if args.write is None:
        for name, make in BLOCKS.items():
            print(f"<!-- generated: {name} -->\n{make()}\n<!-- end: {name} -->\n")
        return 0
    texts = {path: path.read_text() for path in args.write}
    missing = set(BLOCKS).difference(*(readme_blocks(t) for t in texts.values()))
    if missing:
        files = ", ".join(map(str, texts))
        parser.error(f"no file of {files} holds the block(s) {', '.join(sorted(missing))}")
    for path, text in texts.items():
        try:
            path.write_text(render(text))
        except ValueError as err:
            parser.error(f"{path}: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
