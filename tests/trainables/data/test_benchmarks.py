"""Benchmark sources on the real files in ../shared/data (GSM8K, SVAMP, AQuA, MATH-500, MMLU math),
answer extraction from their own solution texts, and the error paths on small bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainables.data.benchmarks import (
    BENCHMARKS,
    extract_answer,
    get_benchmark,
    is_correct,
    load_benchmark,
)
from trainables.data.benchmarks.answers import choice_letter, last_boxed, normalize_latex_answer
from trainables.data.records import Record

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"real benchmark files not found at {DATA} (../shared/data)"
)


def _load(name: str, relative: str = "") -> list[Record]:
    return load_benchmark(name, DATA / relative if relative else DATA)


def test_registry_names() -> None:
    assert sorted(BENCHMARKS) == ["aqua", "gsm8k", "math", "mmlu", "svamp"]
    with pytest.raises(ValueError, match=r"unknown benchmark 'gsm9k'; known: aqua, gsm8k"):
        get_benchmark("gsm9k")
    with pytest.raises(ValueError, match="unknown benchmark 'nope'"):
        load_benchmark("nope", "anywhere")


# Row counts from the README table of ../shared/data.
@needs_data
@pytest.mark.parametrize(
    ("name", "relative", "rows"),
    [
        ("gsm8k", "", 1319),
        ("gsm8k", "gsm8k", 1319),
        ("gsm8k", "gsm8k/train.jsonl", 7473),
        ("svamp", "", 1000),
        ("aqua", "", 254),
        ("aqua", "aqua/dev.json", 254),
        ("math", "", 500),
        ("mmlu", "mmlu_math", 1064),
    ],
)
def test_row_counts(name: str, relative: str, rows: int) -> None:
    records = _load(name, relative)
    assert len(records) == rows
    assert all(r.source == name and r.prompt and r.answer for r in records)


@needs_data
def test_gsm8k_records_and_extraction_from_solutions() -> None:
    records = _load("gsm8k")
    first = records[0]
    assert first.prompt.startswith("Janet’s ducks lay 16 eggs per day.")
    assert first.answer == "18" and first.answer_value == 18.0
    assert first.target is not None and first.target.endswith("#### 18")
    # Commas are removed from the reference: the README lists answers such as "1,000".
    assert any("," in r.target.rsplit("####", 1)[1] for r in records if r.target)
    assert all("," not in r.answer for r in records)
    assert all(r.answer_value is not None and r.answer_value == float(r.answer) for r in records)
    for r in records:
        assert r.target is not None
        assert extract_answer("gsm8k", r.target) == r.answer, r.target[-80:]
        assert is_correct("gsm8k", r.target, r)
    # Negative answers keep their sign (e.g. "#### -10").
    assert any(r.answer_value is not None and r.answer_value < 0 for r in records)


@needs_data
def test_gsm8k_train_extraction_from_solutions() -> None:
    records = _load("gsm8k", "gsm8k/train.jsonl")
    assert sum(extract_answer("gsm8k", r.target or "") == r.answer for r in records) == 7473


def test_gsm8k_generated_text() -> None:
    record = Record(prompt="q", answer="1000", answer_value=1000.0, source="gsm8k")
    assert extract_answer("gsm8k", "so 500 + 500\n#### 1,000\nQuestion: next 7") == "1000"
    assert extract_answer("gsm8k", "She has 5 and then 1,000 in total.") == "1000"
    assert extract_answer("gsm8k", "#### none") is None
    assert is_correct("gsm8k", "The answer is 1000.0", record)
    assert not is_correct("gsm8k", "The answer is 999", record)
    assert not is_correct("gsm8k", "no idea", record)


@needs_data
def test_svamp_values() -> None:
    records = _load("svamp")
    raw = json.loads((DATA / "svamp" / "SVAMP.json").read_text())
    assert records[0].prompt == (
        "Each pack of dvds costs 76 dollars. If there is a discount of 25 dollars on each pack "
        "How much do you have to pay to buy each pack?"
    )
    assert records[0].answer == "51" and records[0].answer_value == 51.0
    for record, row in zip(records, raw, strict=True):
        assert record.answer_value == float(row["Answer"])
        assert float(record.answer) == float(row["Answer"])
        assert not record.answer.endswith(".0")
        assert record.target is None
        # The value written as the final number of a sentence is judged correct.
        assert is_correct("svamp", f"So the answer is {record.answer}.", record)


def test_svamp_formats_non_integral_answers() -> None:
    bench = get_benchmark("svamp")
    row = {"Body": "A.", "Question": "B?", "Answer": 2.5}
    assert bench.record_from_row(row, "f:1").answer == "2.5"


@needs_data
def test_aqua_records_and_letters_from_rationales() -> None:
    records = _load("aqua")
    first = records[0]
    assert first.answer == "A" and first.answer_value is None
    assert first.prompt.splitlines()[1:] == [
        "A) 5(√3 + 1)",
        "B) 6(√3 + √2)",
        "C) 7(√3 – 1)",
        "D) 8(√3 – 2)",
        "E) None of these",
    ]
    extracted = [extract_answer("aqua", r.target or "") for r in records]
    right = sum(x == r.answer for x, r in zip(extracted, records, strict=True))
    wrong = sum(x is not None and x != r.answer for x, r in zip(extracted, records, strict=True))
    # Measured: 237 of 254 rationales state the letter in a form we read, 16 state none
    # (they end in a computation), and one reads "each answer choice: (A) ..." first.
    assert right >= 237
    assert wrong <= 1


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("The answer is (C).", "C"),
        ("answer: C", "C"),
        ("ANSWER:B", "B"),
        ("Answer : Option E", "E"),
        ("So the correct option is D.", "D"),
        ("B is the answer", "B"),
        ("(C) is correct", "C"),
        ("C", "C"),
        ("(D)", "D"),
        ("E)", "E"),
        ("x = 3 so\nB", "B"),
        ("The answer is A. Wait, answer is (B)", "B"),
        ("We rule out (A) and pick (C)", "C"),
        ("the answer is a number", None),
        ("The answer is F", None),
    ],
)
def test_choice_letter(text: str, letter: str | None) -> None:
    assert choice_letter(text, "ABCDE") == letter


@needs_data
def test_mmlu_records() -> None:
    records = _load("mmlu")
    raw = [json.loads(line) for line in (DATA / "mmlu_math" / "test.jsonl").open()]
    assert records[0].prompt == (
        "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q.\n"
        "A) 0\nB) 4\nC) 2\nD) 6"
    )
    for record, row in zip(records, raw, strict=True):
        assert record.answer == "ABCD"[row["answer"]]
        assert extract_answer("mmlu", f"The answer is ({record.answer})") == record.answer
        assert is_correct("mmlu", f"Answer: {record.answer}", record)
        wrong = "ABCD"[(row["answer"] + 1) % 4]
        assert not is_correct("mmlu", f"Answer: {wrong}", record)
    # MMLU has four choices: an "E" is never an answer.
    assert extract_answer("mmlu", "The answer is E") is None


@needs_data
def test_math_boxed_answers_from_solutions() -> None:
    records = _load("math")
    boxed_equal = sum(last_boxed(r.target or "") == r.answer for r in records)
    judged = sum(is_correct("math", r.target or "", r) for r in records)
    # Measured on MATH-500: the last \boxed{} of every solution is exactly its `answer`.
    assert boxed_equal == 500
    assert judged == 500
    numeric = [r for r in records if r.answer_value is not None]
    assert len(numeric) == 388  # measured: answers that are one number ("12", "\frac{1}{4}")
    by_answer = {r.answer: r for r in records}
    assert by_answer["\\frac{11}{2}"].answer_value == 5.5


def test_last_boxed_balances_braces() -> None:
    assert last_boxed("so $\\boxed{\\frac{1}{2}}$ and") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{1} then \\boxed{\\{1, 2\\}}") == "\\{1, 2\\}"
    assert last_boxed("\\boxed {7}") == "7"
    assert last_boxed("\\boxed{unclosed") is None
    assert last_boxed("nothing boxed") is None


@pytest.mark.parametrize(
    ("generated", "answer", "correct"),
    [
        ("\\boxed{\\dfrac{1}{2}}", "\\frac{1}{2}", True),
        ("\\boxed{0.5}", "\\frac{1}{2}", True),
        (
            "\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}",
            "\\left( 3, \\frac{\\pi}{2} \\right)",
            True,
        ),
        ("\\boxed{(3,\\frac{\\pi}{2})}", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
        ("\\boxed{90}", "90^\\circ", True),
        ("\\boxed{10\\%}", "10", True),
        ("\\boxed{1{,}000}", "1000", True),
        ("\\boxed{\\text{(C)}}", "\\text{(C)}", True),
        ("The answer is 12", "12", True),
        ("\\boxed{p + q}", "p - q", False),
        ("\\boxed{3}", "\\frac{1}{3}", False),
        ("no answer", "5", False),
    ],
)
def test_math_is_correct(generated: str, answer: str, correct: bool) -> None:
    record = Record(prompt="q", answer=answer, answer_value=None, source="math")
    assert is_correct("math", generated, record) is correct


def test_normalize_latex_answer() -> None:
    assert normalize_latex_answer(" \\left( 1, \\!2 \\right) . ") == "(1,2)"
    assert normalize_latex_answer("\\tfrac{3}{4}") == "\\frac{3}{4}"
    assert normalize_latex_answer("15\\mbox{ cm}^2") == "15cm^2"


def test_missing_and_malformed_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"benchmark 'gsm8k': no such file or folder: .*x"):
        load_benchmark("gsm8k", tmp_path / "x")
    with pytest.raises(FileNotFoundError, match=r"holds none of test\.jsonl, gsm8k/test\.jsonl"):
        load_benchmark("gsm8k", tmp_path)
    bad = tmp_path / "test.jsonl"
    bad.write_text('{"question": "q", "answer": "a\\n#### 3"}\n{"question": "q"\n')
    with pytest.raises(ValueError, match=r"test.jsonl:2: malformed JSON line"):
        load_benchmark("gsm8k", tmp_path)
    bad.write_text('{"question": "q", "answer": "no marker"}\n')
    with pytest.raises(ValueError, match=r"test.jsonl:1: key 'answer' has no '####'"):
        load_benchmark("gsm8k", bad)
    bad.write_text('{"problem": "p", "solution": "s"}\n')
    with pytest.raises(ValueError, match=r"test.jsonl:1: missing key 'answer'"):
        load_benchmark("math", bad)
    bad.write_text('{"question": "q", "choices": ["1", "2", "3", "4"], "answer": 4}\n')
    with pytest.raises(ValueError, match=r"key 'answer' must be an index 0-3, got 4"):
        load_benchmark("mmlu", bad)
    bad.write_text('{"question": "q", "choices": ["1", "2", "3", "4"], "answer": "B"}\n')
    with pytest.raises(ValueError, match=r"key 'answer' must be int, got str"):
        load_benchmark("mmlu", bad)
    bad.write_text("\n")
    with pytest.raises(ValueError, match="the file is empty"):
        load_benchmark("aqua", bad)
    svamp = tmp_path / "SVAMP.json"
    svamp.write_text('[{"Body": "b", "Question": "q", "Answer": "7"}]')
    with pytest.raises(ValueError, match=r"SVAMP.json\[0\]: key 'Answer' must be a number"):
        load_benchmark("svamp", tmp_path)
    svamp.write_text("[]")
    with pytest.raises(ValueError, match="holds no rows"):
        load_benchmark("svamp", svamp)


def test_hub_without_datasets_says_to_pass_a_path() -> None:
    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match=r"pass a local path to test\.jsonl"):
            load_benchmark("gsm8k", None)
    else:
        pytest.skip("`datasets` is installed here and the hub path needs the network")
