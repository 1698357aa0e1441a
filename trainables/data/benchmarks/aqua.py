"""AQuA-RAT (algebra word problems, five choices): JSONL rows (despite the ".json" name) with
`question`, `options` ("A)…" to "E)…"), `rationale` and `correct` (the letter)."""

from __future__ import annotations

import re
from typing import Any

from trainables.data.benchmarks.answers import choice_letter
from trainables.data.benchmarks.source import Benchmark, HubSplit, row_value
from trainables.data.records import Record

NAME = "aqua"
LETTERS = "ABCDE"
_OPTION = re.compile(r"\s*\(?(?P<letter>[A-E])\)\s*(?P<text>.*)", re.DOTALL)


def _options(options: list[Any], where: str) -> list[str]:
    lines = []
    for index, option in enumerate(options):
        match = _OPTION.fullmatch(option) if isinstance(option, str) else None
        if match is None or match.group("letter") != LETTERS[index]:
            raise ValueError(
                f"{where}: key 'options'[{index}] should start with {LETTERS[index]!r}, got "
                f"{option!r:.60}"
            )
        lines.append(f"{match.group('letter')}) {match.group('text').strip()}")
    return lines


def record_from_row(row: dict[str, Any], where: str) -> Record:
    question = row_value(row, "question", str, where).strip()
    options = row_value(row, "options", list, where)
    if not 2 <= len(options) <= len(LETTERS):
        raise ValueError(f"{where}: key 'options' must hold 2 to 5 choices, got {len(options)}")
    correct = row_value(row, "correct", str, where).strip()
    if correct not in LETTERS[: len(options)]:
        raise ValueError(
            f"{where}: key 'correct' must be one of the option letters, got {correct!r}"
        )
    rationale = row_value(row, "rationale", str, where)
    return Record(
        prompt="\n".join([question, *_options(options, where)]),
        answer=correct,
        answer_value=None,
        source=NAME,
        target=rationale,
    )


def extract_answer(text: str) -> str | None:
    """The choice letter A–E the text gives (see `choice_letter`)."""
    return choice_letter(text, LETTERS)


def is_correct(text: str, record: Record) -> bool:
    return extract_answer(text) == record.answer


BENCHMARK = Benchmark(
    name=NAME,
    file_names=("test.json", "aqua/test.json"),
    hub=(HubSplit("deepmind/aqua_rat", "raw", "test"),),
    record_from_row=record_from_row,
    extract_answer=extract_answer,
    is_correct=is_correct,
)
