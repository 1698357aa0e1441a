"""GSM8K (grade-school math word problems): JSONL rows `question`, `answer`, where `answer` is the
worked solution ending in "#### <number>" (the number may contain thousands commas)."""

from __future__ import annotations

from typing import Any

from trainables.data.benchmarks.answers import (
    final_number_answer,
    first_number_answer,
    numeric_answer_correct,
)
from trainables.data.benchmarks.source import Benchmark, HubSplit, row_value
from trainables.data.records import Record
from trainables.metrics.numbers import parse_number

NAME = "gsm8k"
MARKER = "####"


def record_from_row(row: dict[str, Any], where: str) -> Record:
    question = row_value(row, "question", str, where)
    solution = row_value(row, "answer", str, where)
    if MARKER not in solution:
        raise ValueError(f"{where}: key 'answer' has no {MARKER!r} line with the final answer")
    answer = solution.rsplit(MARKER, 1)[1].strip().replace(",", "")
    if not answer:
        raise ValueError(f"{where}: nothing after {MARKER!r} in key 'answer'")
    parsed = parse_number(answer)
    return Record(
        prompt=question,
        answer=answer,
        answer_value=None if parsed is None else parsed.float_value,
        source=NAME,
        target=solution,
    )


def extract_answer(text: str) -> str | None:
    """The first number after the last "####" when the text has one (a model may keep writing
    after it), else the final number of the text."""
    if MARKER in text:
        return first_number_answer(text.rsplit(MARKER, 1)[1])
    return final_number_answer(text)


def is_correct(text: str, record: Record) -> bool:
    return numeric_answer_correct(extract_answer(text), record.answer_value)


BENCHMARK = Benchmark(
    name=NAME,
    file_names=("test.jsonl", "gsm8k/test.jsonl"),
    hub=(HubSplit("openai/gsm8k", "main", "test"),),
    record_from_row=record_from_row,
    extract_answer=extract_answer,
    is_correct=is_correct,
)
