"""SVAMP (varied one-step arithmetic word problems): one JSON array of objects with `Body`,
`Question`, `Equation` and `Answer` (a float). The prompt is the body followed by the question."""

from __future__ import annotations

from typing import Any

from trainables.data.benchmarks.answers import (
    final_number_answer,
    format_number,
    numeric_answer_correct,
)
from trainables.data.benchmarks.source import Benchmark, HubSplit, row_value
from trainables.data.records import Record

NAME = "svamp"


def record_from_row(row: dict[str, Any], where: str) -> Record:
    body = row_value(row, "Body", str, where).strip()
    question = row_value(row, "Question", str, where).strip()
    value = row.get("Answer")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: key 'Answer' must be a number, got {value!r:.60}")
    value = float(value)
    return Record(
        prompt=f"{body} {question}" if body else question,
        answer=format_number(value),
        answer_value=value,
        source=NAME,
    )


def extract_answer(text: str) -> str | None:
    """The final number of the text."""
    return final_number_answer(text)


def is_correct(text: str, record: Record) -> bool:
    return numeric_answer_correct(extract_answer(text), record.answer_value)


BENCHMARK = Benchmark(
    name=NAME,
    file_names=("SVAMP.json", "svamp/SVAMP.json"),
    # The hub copy holds the 300-row test split of the 1,000 problems.
    hub=(HubSplit("ChilleD/SVAMP", None, "test"),),
    record_from_row=record_from_row,
    extract_answer=extract_answer,
    is_correct=is_correct,
)
