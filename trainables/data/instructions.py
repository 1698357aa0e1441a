"""Instruction-tuning data in the Alpaca / MathInstruct format: objects with `instruction`,
optional `input` and `output`, in a JSON array or JSONL file, read as training `Record`s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainables.data.benchmarks.source import read_rows, row_value
from trainables.data.records import Record
from trainables.metrics.numbers import find_final_number


def record_from_instruction(row: dict[str, Any], where: str, default_source: str) -> Record:
    """One instruction row as a Record: prompt = instruction (+ "\\n\\n" + input when the input is
    non-empty), target = output, answer = the final number of the output as written (else the
    whole output), answer_value = that number's value (None without one). `source` is the row's
    own `source` string when it has one (MathInstruct does), else `default_source`."""
    instruction = row_value(row, "instruction", str, where)
    output = row_value(row, "output", str, where)
    extra = row_value(row, "input", str, where) if row.get("input") is not None else ""
    prompt = f"{instruction}\n\n{extra}" if extra.strip() else instruction
    final = find_final_number(output)
    source = row.get("source")
    return Record(
        prompt=prompt,
        answer=output if final is None else final.literal,
        answer_value=None if final is None else final.float_value,
        source=source if isinstance(source, str) and source else default_source,
        target=output,
    )


def load_instructions(path: str | Path) -> list[Record]:
    """All rows of an instruction file (JSON array or JSONL) as Records; errors name the file and
    the row. Rows without `input` (MathInstruct) or with an empty one use the instruction alone."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"instruction data: no such file: {path}")
    default_source = f"instructions/{path.stem}"
    records = [
        record_from_instruction(row, where, default_source) for row, where in read_rows(path)
    ]
    if not records:
        raise ValueError(f"instruction data: {path} holds no rows")
    return records
