"""Reading answers out of generated text, shared by the benchmark sources: the final number,
a multiple-choice letter, the last `\\boxed{…}`, and the normalisation MATH answers need before
they can be compared as strings."""

from __future__ import annotations

import re

from trainables.metrics.numbers import find_final_number, find_numbers, numbers_match, parse_number


def format_number(value: float) -> str:
    """A float as an answer string: integral values without ".0" (51.0 -> "51"), others by
    their shortest repr (2.5 -> "2.5")."""
    if value.is_integer():
        return str(int(value))
    return repr(value)


def final_number_answer(text: str) -> str | None:
    """The last number in `text` as written (commas removed, e.g. "1000", "-2.5", "3/4")."""
    found = find_final_number(text)
    return None if found is None else found.literal


def first_number_answer(text: str) -> str | None:
    """The first number in `text` as written, or None."""
    numbers = find_numbers(text)
    return numbers[0].literal if numbers else None


def numeric_answer_correct(predicted: str | None, reference: float | None) -> bool:
    """Whether a predicted answer string is one number equal (with `numbers_match`'s tolerance)
    to the reference value."""
    if predicted is None or reference is None:
        return False
    parsed = parse_number(predicted)
    value = None if parsed is None else parsed.float_value
    return value is not None and numbers_match(value, reference)


# "The answer is (C)", "Answer: C", "ANSWER:B", "answer = D", "Correct option is E",
# "Answer: Option A", "Choice (C) is correct", "Answer will be (B)": a keyword (any case), a
# short connective, then an upper-case letter standing alone.
_KEYWORD_LETTER = re.compile(
    r"(?i:\b(?:answer|ans|option|choice)\b)"
    r"(?:\s*(?i:is|will\s+be|should\s+be|would\s+be|must\s+be))?"
    r"(?:\s*(?i:option|choice))?"
    r"\s*[:=.,\-]?\s*"
    r"\(?(?P<letter>[A-Z])\)?(?![A-Za-z0-9])"
)
# "C is the answer", "(B) is correct", "D is the correct choice".
_LETTER_KEYWORD = re.compile(
    r"(?<![A-Za-z0-9])\(?(?P<letter>[A-Z])\)?\s+(?i:is\s+(?:the\s+)?(?:correct|right|answer))"
)
_LONE_LETTER = re.compile(r"\s*\(?(?P<letter>[A-Z])\)?[.:]?\s*")
_PAREN_LETTER = re.compile(r"\((?P<letter>[A-Z])\)")


def choice_letter(text: str, letters: str) -> str | None:
    """The multiple-choice letter a text gives, among `letters` (e.g. "ABCDE"): the last
    explicit statement ("The answer is (C)", "Answer: C", "C is the answer") or last line that
    is only a letter ("C", "(C)", "C."), else the last "(C)" in the text; None otherwise."""
    candidates: list[tuple[int, str]] = []
    for pattern in (_KEYWORD_LETTER, _LETTER_KEYWORD):
        for match in pattern.finditer(text):
            if match.group("letter") in letters:
                candidates.append((match.start("letter"), match.group("letter")))
    # A last line that is only a letter ("…\nB", "E)") is a statement too.
    lines = text.rstrip().rsplit("\n", 1)
    lone = _LONE_LETTER.fullmatch(lines[-1])
    if lone is not None and lone.group("letter") in letters:
        candidates.append((len(text) - len(lines[-1]) + lone.start("letter"), lone.group("letter")))
    if candidates:
        return max(candidates)[1]
    in_parens = [m.group("letter") for m in _PAREN_LETTER.finditer(text)]
    in_parens = [letter for letter in in_parens if letter in letters]
    return in_parens[-1] if in_parens else None


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{…}` (or `\\fbox{…}`) in `text`, braces balanced, or
    None when there is none or its braces never close."""
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    open_brace = text.find("{", start)
    if open_brace < 0:
        return None
    between = text[start:open_brace]
    if between not in ("\\boxed", "\\fbox") and between.strip() not in ("\\boxed", "\\fbox"):
        return None
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace + 1 : i]
    return None


_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}")
_LATEX_REMOVE = (
    "\\left",
    "\\right",
    "\\!",
    "\\,",
    "\\;",
    "\\:",
    "\\ ",
    "\\displaystyle",
    "^\\circ",
    "^{\\circ}",
    "\\%",
    "%",
    "\\$",
    "$",
)


def normalize_latex_answer(answer: str) -> str:
    """A MATH answer reduced for string comparison: `\\text{…}`-style wrappers unwrapped,
    `\\left`/`\\right`, thin spaces `\\!` `\\,` `\\;`, degree signs, percent and dollar signs
    removed, `\\dfrac`/`\\tfrac` -> `\\frac`, "{,}" thousands separators dropped, all
    whitespace removed and a trailing full stop dropped."""
    text = answer.strip()
    text = _TEXT_WRAPPER.sub(r"\1", text)
    for piece in _LATEX_REMOVE:
        text = text.replace(piece, "")
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("{,}", "")
    text = "".join(text.split())
    return text.removesuffix(".")


def latex_answers_match(predicted: str | None, reference: str) -> bool:
    """MATH-style comparison: equal after `normalize_latex_answer`, or both one number and
    numerically equal ("0.5" matches "\\frac{1}{2}")."""
    if predicted is None:
        return False
    pred, ref = normalize_latex_answer(predicted), normalize_latex_answer(reference)
    if pred == ref:
        return True
    pred_number, ref_number = parse_number(pred), parse_number(ref)
    if pred_number is None or ref_number is None:
        return False
    pred_value, ref_value = pred_number.float_value, ref_number.float_value
    return pred_value is not None and ref_value is not None and numbers_match(pred_value, ref_value)
