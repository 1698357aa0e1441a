"""Command-line flags derived from a command's settings dataclass, as litgpt derives its CLI from
typed configs: each field is one flag, named `--field-name` or by its `flag(...)` metadata, its
help the field's docstring, its value parsed by the field's type (or the metadata's parser).
And the way back: the argument list that remakes a settings object, which a study's index.txt
lists beside each file. So an option is written once, in its settings class."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import itertools
import re
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.cli_conventions import shown_default
from records.errors import ResultsError

KEY = "numsweep.flag"
"""The key of a field's `Flag` in its dataclass metadata."""


@dataclass(frozen=True)
class Flag:
    """How a field appears on the command line, where its name and type do not say it all."""

    names: tuple[str, ...] = ()
    """The flag and its aliases; empty: `--field-name`."""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    parse: Callable[[Any], Any] | None = None
    """Given text to the field's value (a list field: the list of comma-separated items);
    a ValueError is bad input (exit 2)."""
    text: Callable[[Any], str] = str
    """One value (a list field: one item) as the text `parse` reads back."""
    commas: bool = True
    """A list field: a value may list several items, comma-separated; False: one item per flag
    (an arm's label may hold commas), the flag repeated for several."""
    bare: Any = None
    """The value of the flag given alone (`--plateau`); None: the flag needs a value."""
    renames: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """A nested settings field: its fields' flags renamed here (field name -> flags)."""
    command_line: bool = True
    """False: the command sets this field from its other inputs; no flag."""


def flag(*names: str, **how: Any) -> dict[str, Flag]:
    """A field's metadata: `field(default=…, metadata=flag("--arms", metavar="LABEL"))`."""
    return {KEY: Flag(names, **how)}


def numbers(option: str, what: str) -> Callable[[list[str]], tuple[float, ...]]:
    """A list flag's `parse`: each item as a float; an item that is not a number is bad input
    naming `option` and `what` each item is ("a number of FLOPs")."""

    def parse(texts: list[str]) -> tuple[float, ...]:
        out = []
        for text in texts:
            try:
                out.append(float(text))
            except ValueError:
                raise ValueError(f"{option}: {text!r} is not {what}") from None
        return tuple(out)

    return parse


def split_list(values: Sequence[str] | None) -> list[str]:
    """Repeated and comma-separated option values, flattened."""
    return [v.strip() for item in values or () for v in item.split(",") if v.strip()]


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a dataclass's fields (field name -> text), its bases' too."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            named = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            if named and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                docs[node.target.id] = inspect.cleandoc(str(after.value.value))
    return docs


@dataclass(frozen=True)
class _Option:
    """One field as the command line sees it."""

    owner: type  # the dataclass the field is written in, with its docstring
    field: dataclasses.Field
    how: Flag
    names: tuple[str, ...]
    dest: str
    kind: str  # "switch" (bool), "list" (tuple), "nested" (a dataclass) or "one"
    item: Any  # the type of the value, or of a list's items, or the nested dataclass

    @property
    def default(self) -> Any:
        f = self.field
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        return f.default

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING


def _shape(f: dataclasses.Field, hint: Any) -> tuple[str, Any]:
    """(kind, item type) of a field by its resolved type hint; `X | None` counts as X, and a
    dataclass the metadata's parser makes from text (a ValueSpec) as one value."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if len(args) == 1 else str
    if hint is bool:
        return "switch", bool
    if typing.get_origin(hint) is tuple:
        return "list", typing.get_args(hint)[0]
    if dataclasses.is_dataclass(hint) and f.metadata.get(KEY, Flag()).parse is None:
        return "nested", hint
    return "one", hint


def options(
    cls: type, prefix: str = "", renames: Mapping[str, tuple[str, ...]] | None = None
) -> list[_Option]:
    """The command-line options of settings class `cls`, nested settings flattened in order; its
    required fields first (a settings class that derives from shared settings, as `power`'s
    does, declares its own required field after the shared ones: `power R --delta 0.02 …`)."""
    hints = typing.get_type_hints(cls)
    found: list[_Option] = []
    fields = dataclasses.fields(cls)
    missing = dataclasses.MISSING
    required = [f for f in fields if f.default is missing and f.default_factory is missing]
    for f in [*required, *(f for f in fields if f not in required)]:
        how = f.metadata.get(KEY, Flag())
        if not how.command_line:
            continue
        kind, item = _shape(f, hints[f.name])
        names = (renames or {}).get(f.name) or how.names or (f"--{f.name.replace('_', '-')}",)
        option = _Option(cls, f, how, names, prefix + f.name, kind, item)
        if kind == "nested":
            found += options(item, f"{option.dest}.", how.renames)
        else:
            found.append(option)
    return found


def _help(option: _Option, flags: Mapping[str, str]) -> str:
    """The field's docstring in the command line's words: without the flag it names in brackets
    (argparse shows the flag), a `field` it names as its flag (`flags`: field name -> flag),
    "None: …" (the field unset) as "default: …", and its default where it has one."""
    text = field_docs(option.owner).get(option.field.name, "")
    text = re.sub(r"\s*\(-{1,2}[a-z][^)]*\)", "", text)
    text = re.sub(r"`([^`]+)`", lambda m: flags.get(m[1], f'"{m[1]}"'), text)
    text = re.sub(r"(--[\w-]+) is None\b", r"\1 is not given", text)
    text = re.sub(r"(^|[;.] )None: ", r"\1default: ", text)
    if option.how.bare is not None:
        text = text.replace(f'"{option.how.bare}" = ', "given alone: ")
    said = []
    choices = [str(c) for c in option.how.choices or _literal(option.item) or ()]
    if choices and not all(c in text for c in choices):
        said.append(f"choices: {', '.join(choices)}")
    default = None if option.required else shown_default(option.default)
    if default is not None and "default" not in text:
        said.append(f"default: {_shown(option, option.default)}")
    if said:
        text = text[:-1] if text.endswith(".") and not text.endswith("...") else text
        text = f"{text} ({'; '.join(said)})."
    return " ".join(text.split()).replace("%", "%%")


def _shown(option: _Option, value: Any) -> str:
    """A default as its flag's text (a list: comma-separated)."""
    if option.kind == "list":
        return ",".join(option.how.text(v) for v in value)
    return option.how.text(value)


class TakesArguments(typing.Protocol):
    """An argparse parser or argument group (`parser.add_argument_group(...)`)."""

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action: ...


def add_flags(parser: TakesArguments, cls: type, prefix: str = "") -> None:
    """One flag per field of `cls` (dest `prefix` + field name); an absent flag leaves the
    field's default."""
    found = options(cls, prefix)
    flags = {o.field.name: o.names[0] for o in found}
    for option in found:
        kwargs: dict[str, Any] = {"dest": option.dest, "default": None}
        kwargs["help"] = _help(option, flags)
        if option.kind == "switch":
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = option.how.metavar or option.names[-1].lstrip("-").upper()
            kwargs["choices"] = option.how.choices or _literal(option.item)
            if option.kind == "list":
                kwargs["action"] = "append"
            elif option.item in (int, float) and option.how.parse is None:
                kwargs["type"] = option.item
            if option.how.bare is not None:
                kwargs.update(nargs="?", const=option.how.bare)
            kwargs["required"] = option.required
        parser.add_argument(*option.names, **kwargs)


def _literal(item: Any) -> tuple[Any, ...] | None:
    """A Literal type's values, which are its choices."""
    return typing.get_args(item) if typing.get_origin(item) is typing.Literal else None


def _items(option: _Option, given: Sequence[str] | None) -> list[str]:
    """A list field's items: the values of the repeated flag, comma-separated ones split."""
    if option.how.commas:
        return split_list(given)
    return [v.strip() for v in given or () if v.strip()]


def _value(option: _Option, given: Any) -> Any:
    """The field's value from what argparse collected; ValueError on bad text."""
    if option.kind == "list":
        items = _items(option, given)
        if option.how.parse is not None:
            return option.how.parse(items)
        if option.item in (int, float):
            return tuple(_number(option, text) for text in items)
        return tuple(items)
    if option.how.parse is not None:
        return option.how.parse(given)
    return given


def _number(option: _Option, text: str) -> Any:
    try:
        return option.item(text)
    except ValueError:
        raise ValueError(f"{option.names[0]}: {text!r} is not a number") from None


def from_flags(args: argparse.Namespace, cls: type, prefix: str = "", **fixed: Any) -> Any:
    """The settings object the parsed flags describe (`fixed` fields set by the command); bad
    values and settings that refuse them are ResultsError (exit 2)."""
    hints = typing.get_type_hints(cls)
    given: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind, item = _shape(f, hints[f.name])
        if kind == "nested" and f.metadata.get(KEY, Flag()).command_line:
            given[f.name] = from_flags(args, item, f"{prefix}{f.name}.")
    for option in options(cls, prefix):
        if option.dest.count(".") > prefix.count("."):
            continue  # a nested settings field's, made above
        text = getattr(args, option.dest, None)
        if text is None or (option.kind == "list" and not _items(option, text)):
            continue
        try:
            given[option.field.name] = _value(option, text)
        except ValueError as err:
            raise ResultsError(str(err)) from err
    try:
        return cls(**given, **fixed)
    except ValueError as err:
        raise ResultsError(str(err)) from err


def as_flags(settings: Any) -> list[str]:
    """The flags that remake `settings` with `from_flags`: one per field off its default."""
    argv: list[str] = []
    for option in options(type(settings)):
        value = _get(settings, option.dest)
        if value == option.default:
            continue
        name = next((n for n in option.names if n.startswith("--")), option.names[0])
        how = option.how
        if option.kind == "switch":
            argv.append(name)
        elif value is None:
            raise ValueError(f"{name}: None is not a command-line value")
        elif how.bare is not None and value == how.bare:
            argv.append(name)
        elif option.kind == "list" and how.commas:
            argv += [name, ",".join(how.text(v) for v in value)]
        elif option.kind == "list":
            argv += [arg for v in value for arg in (name, how.text(v))]
        else:
            argv += [name, how.text(value)]
    return argv


def _get(settings: Any, dest: str) -> Any:
    for part in dest.split("."):
        settings = getattr(settings, part)
    return settings


METRICS_FLAG = flag("--metrics", "--metric", metavar="M")
"""Metric names or globs, repeatable or comma-separated."""
STATUS_FLAG = flag("--status", metavar="S")
"""Trial statuses read, e.g. TERMINATED,RUNNING."""
ARMS_FLAG = flag("--arms", metavar="LABEL", commas=False)
"""Arm labels, the flag repeated: a label may hold commas ("del (alpha=0.01, decay_base=1.02)")."""
