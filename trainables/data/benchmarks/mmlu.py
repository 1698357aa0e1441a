"""MMLU, mathematics subjects: JSONL rows `question`, `choices` (four strings), `answer` (index
0–3) and `type` (the subject; `subject` on the hub)."""

from __future__ import annotations

from typing import Any

from trainables.data.benchmarks.answers import choice_letter
from trainables.data.benchmarks.source import Benchmark, HubSplit, row_value
from trainables.data.records import Record

NAME = "mmlu"
LETTERS = "ABCD"
# The MMLU subjects kept as "math" (the local file is filtered to these).
MATH_SUBJECTS = (
    "abstract_algebra",
    "college_mathematics",
    "elementary_mathematics",
    "high_school_mathematics",
    "high_school_statistics",
)


def record_from_row(row: dict[str, Any], where: str) -> Record:
    question = row_value(row, "question", str, where).strip()
    choices = row_value(row, "choices", list, where)
    if len(choices) != len(LETTERS):
        raise ValueError(f"{where}: key 'choices' must hold 4 choices, got {len(choices)}")
    index = row_value(row, "answer", int, where)
    if not 0 <= index < len(choices):
        raise ValueError(f"{where}: key 'answer' must be an index 0-3, got {index}")
    lines = [
        f"{letter}) {str(choice).strip()}" for letter, choice in zip(LETTERS, choices, strict=True)
    ]
    return Record(
        prompt="\n".join([question, *lines]),
        answer=LETTERS[index],
        answer_value=None,
        source=NAME,
    )


def extract_answer(text: str) -> str | None:
    """The choice letter A–D the text gives (see `choice_letter`)."""
    return choice_letter(text, LETTERS)


def is_correct(text: str, record: Record) -> bool:
    return extract_answer(text) == record.answer


BENCHMARK = Benchmark(
    name=NAME,
    file_names=("test.jsonl", "mmlu_math/test.jsonl"),
    hub=tuple(HubSplit("cais/mmlu", subject, "test") for subject in MATH_SUBJECTS),
    record_from_row=record_from_row,
    extract_answer=extract_answer,
    is_correct=is_correct,
)
