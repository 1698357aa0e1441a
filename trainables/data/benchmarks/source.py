"""What a benchmark source is (`Benchmark`), and the file handling every source shares: finding
the file under a path, reading JSON-array or JSONL rows, and checking a row's fields with errors
that name the file and the line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from trainables.data.records import Record

T = TypeVar("T")


@dataclass(frozen=True)
class HubSplit:
    """One `datasets.load_dataset(path, config, split=split)` call."""

    path: str
    config: str | None
    split: str


@dataclass(frozen=True)
class Benchmark:
    """A benchmark source: where its file usually lives, how a row becomes a `Record`, and how
    an answer is read from generated text and judged. A new benchmark is one module that
    defines one of these and one line in the registry."""

    name: str
    file_names: tuple[str, ...]
    """Where the file sits under a folder the user passes, tried in order (e.g. "test.jsonl",
    then "gsm8k/test.jsonl" for the data root)."""
    hub: tuple[HubSplit, ...]
    """Hugging Face hub splits concatenated when no path is given."""
    record_from_row: Callable[[dict[str, Any], str], Record]
    """(row, where) -> Record; `where` ("file:line") goes into error messages."""
    extract_answer: Callable[[str], str | None]
    """The answer a generated text gives, as a string comparable with `Record.answer`."""
    is_correct: Callable[[str, Record], bool]
    """Whether a generated text answers the record correctly."""


def row_value(row: dict[str, Any], key: str, kind: type[T], where: str) -> T:
    """row[key], checked to be a `kind`; a clear error naming the key and the row otherwise."""
    if key not in row:
        raise ValueError(f"{where}: missing key {key!r} (keys: {sorted(row)})")
    value = row[key]
    # bool is an int subclass; a JSON true is never a valid number or index here.
    if not isinstance(value, kind) or (kind in (int, float) and isinstance(value, bool)):
        raise ValueError(
            f"{where}: key {key!r} must be {kind.__name__}, got {type(value).__name__} "
            f"({value!r:.60})"
        )
    return value


def resolve_file(benchmark: Benchmark, path: str | Path) -> Path:
    """`path` itself when it is a file, else the first of the benchmark's usual file names under
    it; FileNotFoundError naming what was looked for otherwise."""
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        for name in benchmark.file_names:
            candidate = path / name
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(
            f"benchmark {benchmark.name!r}: folder {path} holds none of "
            f"{', '.join(benchmark.file_names)}"
        )
    raise FileNotFoundError(f"benchmark {benchmark.name!r}: no such file or folder: {path}")


def read_rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """(row, where) for every row of a JSON array file or a JSONL file (detected from the first
    character, since AQuA's ".json" files are JSONL). `where` is "file:line" for JSONL and
    "file[index]" for an array."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err})") from err
    stripped = text.lstrip()
    if not stripped:
        raise ValueError(f"{path}: the file is empty")
    if stripped.startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: malformed JSON array: {err}") from err
        for index, row in enumerate(rows):
            yield _as_object(row, f"{path}[{index}]"), f"{path}[{index}]"
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where}: malformed JSON line: {err}") from err
        yield _as_object(row, where), where


def _as_object(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def records_from_rows(
    benchmark: Benchmark, rows: Iterable[tuple[dict[str, Any], str]], origin: str
) -> list[Record]:
    records = [benchmark.record_from_row(row, where) for row, where in rows]
    if not records:
        raise ValueError(f"benchmark {benchmark.name!r}: {origin} holds no rows")
    return records
