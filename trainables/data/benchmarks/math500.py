"""MATH (the 500-problem MATH-500 subset by default): JSONL rows `problem`, `solution` (ending in a
`\\boxed{…}` answer), `answer` (LaTeX), `subject`, `level`."""

from __future__ import annotations

from typing import Any

from trainables.data.benchmarks.answers import (
    final_number_answer,
    last_boxed,
    latex_answers_match,
    normalize_latex_answer,
)
from trainables.data.benchmarks.source import Benchmark, HubSplit, row_value
from trainables.data.records import Record
from trainables.metrics.numbers import parse_number

NAME = "math"


def record_from_row(row: dict[str, Any], where: str) -> Record:
    problem = row_value(row, "problem", str, where)
    answer = row_value(row, "answer", str, where).strip()
    solution = row_value(row, "solution", str, where)
    # Numeric only when the whole normalised answer is one number ("12", "-\frac{3}{4}").
    parsed = parse_number(normalize_latex_answer(answer))
    return Record(
        prompt=problem,
        answer=answer,
        answer_value=None if parsed is None else parsed.float_value,
        source=NAME,
        target=solution,
    )


def extract_answer(text: str) -> str | None:
    """The content of the last `\\boxed{…}`, else the final number of the text."""
    boxed = last_boxed(text)
    return boxed if boxed is not None else final_number_answer(text)


def is_correct(text: str, record: Record) -> bool:
    return latex_answers_match(extract_answer(text), record.answer)


BENCHMARK = Benchmark(
    name=NAME,
    file_names=("test.jsonl", "math500/test.jsonl"),
    hub=(HubSplit("HuggingFaceH4/MATH-500", None, "test"),),
    record_from_row=record_from_row,
    extract_answer=extract_answer,
    is_correct=is_correct,
)
