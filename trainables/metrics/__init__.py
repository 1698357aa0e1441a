"""Evaluation metrics: the cross-entropy decomposition, teacher-forced digit metrics, and
number metrics on generated text."""

from trainables.metrics.decomposition import CEDecomposition
from trainables.metrics.digits import DigitMetrics
from trainables.metrics.numbers import (
    ParsedNumber,
    PlaceAccuracy,
    find_final_number,
    find_numbers,
    numbers_match,
    parse_final_number,
    parse_number,
    place_accuracy,
    score_numbers,
)

__all__ = [
    "CEDecomposition",
    "DigitMetrics",
    "ParsedNumber",
    "PlaceAccuracy",
    "find_final_number",
    "find_numbers",
    "numbers_match",
    "parse_final_number",
    "parse_number",
    "place_accuracy",
    "score_numbers",
]
