"""Instruction data (Alpaca / MathInstruct format) as training Records, from JSON arrays and
JSONL, with errors that name the file and row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainables.data.instructions import load_instructions

ALPACA_ROWS = [
    {
        "instruction": "Add the two numbers.",
        "input": "1,250 and 750",
        "output": "1,250 + 750 = 2,000. The answer is 2,000.",
    },
    {"instruction": "Name a primary colour.", "input": "", "output": "Red."},
]
# MathInstruct rows have no `input` but a `source`.
MATHINSTRUCT_ROWS = [
    {
        "source": "data/CoT/gsm_rft.json",
        "instruction": "A shop sells 3 pens at $1.50 each. What do they cost?",
        "output": "3 * 1.50 = 4.50. The answer is 4.5.",
    },
    {
        "source": "data/PoT/mathqa.json",
        "instruction": "Compute minus three quarters.",
        "output": "x = -3/4\nprint(x)",
    },
]


def test_alpaca_json_array(tmp_path: Path) -> None:
    path = tmp_path / "alpaca.json"
    path.write_text(json.dumps(ALPACA_ROWS))
    first, second = load_instructions(path)
    assert first.prompt == "Add the two numbers.\n\n1,250 and 750"
    assert first.target == ALPACA_ROWS[0]["output"]
    assert first.completion == first.target
    assert first.answer == "2000" and first.answer_value == 2000.0
    assert first.source == "instructions/alpaca"
    # Empty input: the instruction alone; no number: the answer is the whole output.
    assert second.prompt == "Name a primary colour."
    assert second.answer == "Red." and second.answer_value is None


def test_mathinstruct_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "math.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in MATHINSTRUCT_ROWS) + "\n\n")
    first, second = load_instructions(str(path))
    assert first.prompt == MATHINSTRUCT_ROWS[0]["instruction"]
    assert first.answer == "4.5" and first.answer_value == 4.5
    assert first.source == "data/CoT/gsm_rft.json"
    assert second.answer == "-3/4" and second.answer_value == -0.75
    assert first["prompt"] == first.prompt  # records read like dicts too


def test_errors_name_the_file_and_row(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="instruction data: no such file"):
        load_instructions(tmp_path / "missing.json")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ALPACA_ROWS[0]) + "\n" + json.dumps({"instruction": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: missing key 'output'"):
        load_instructions(path)
    path.write_text(json.dumps([{"instruction": "x", "output": 5}]))
    with pytest.raises(ValueError, match=r"bad.jsonl\[0\]: key 'output' must be str, got int"):
        load_instructions(path)
    path.write_text(json.dumps([{"instruction": "x", "input": 3, "output": "y"}]))
    with pytest.raises(ValueError, match=r"key 'input' must be str"):
        load_instructions(path)
    path.write_text('[{"instruction": "x",')
    with pytest.raises(ValueError, match="malformed JSON array"):
        load_instructions(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"bad.jsonl\[0\]: expected a JSON object, got int"):
        load_instructions(path)
    path.write_text("[]")
    with pytest.raises(ValueError, match="holds no rows"):
        load_instructions(path)
