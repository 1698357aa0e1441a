"""The generator's shims (compat/mathgen_private.py): idempotent, each doing what its doc says,
and failing with the library named outside the versions they were checked against."""

from __future__ import annotations

import random
import sys
import warnings

import pytest

from compat.mathgen_private import MATHEMATICS_DATASET, SYMPY, apply_generator_shims
from compat.versions import UnsupportedVersion, installed_version, supported
from trainables.data import mathgen


def test_shims_are_idempotent() -> None:
    apply_generator_shims()
    apply_generator_shims()
    from mathematics_dataset.util import composition
    from sympy.solvers.diophantine.diophantine import base_solution_linear

    assert sys.modules["sympy.solvers.diophantine"].base_solution_linear is base_solution_linear
    letters = composition._ALLOWED_SYMBOLS
    assert list(letters) == sorted(set("abcdefghijklmnopqrstuvwxyz") - {"e"})
    assert list(letters.difference({"a", "z"})) == sorted(set(letters) - {"a", "z"})
    assert type(letters).__name__ == "_SortedLetters"
    apply_generator_shims()
    assert composition._ALLOWED_SYMBOLS is letters


def test_round_number_runs_without_float_randint() -> None:
    from mathematics_dataset.modules import numbers as numbers_module

    with warnings.catch_warnings():
        # Python 3.11 warns on float arguments to random.randint, 3.12 raises TypeError.
        warnings.simplefilter("error", DeprecationWarning)
        records = mathgen.generate(["numbers__round_number"], 200, "train", 0)
    assert len(records) == 200
    stand_in = numbers_module.random
    random.seed(5)
    drawn = stand_in.randint(-50.0, 49.0)
    random.seed(5)
    assert drawn == random.randint(-50, 49) and isinstance(drawn, int)
    # A non-integral float is still rejected (ValueError on 3.11 after a warning, TypeError later).
    with warnings.catch_warnings(), pytest.raises((ValueError, TypeError)):
        warnings.simplefilter("ignore", DeprecationWarning)
        stand_in.randint(0.5, 3)
    assert stand_in.uniform is random.uniform


def test_the_installed_generator_and_sympy_are_the_checked_ones() -> None:
    assert supported(MATHEMATICS_DATASET) and supported(SYMPY)
    assert installed_version("mathematics_dataset") == MATHEMATICS_DATASET.checked


def test_outside_the_range_the_shims_refuse_naming_the_library(monkeypatch) -> None:
    import compat.mathgen_private as shims

    monkeypatch.setattr(shims, "SYMPY", shims.SYMPY.__class__("sympy", ">=9", "9.0", "x.py"))
    with pytest.raises(UnsupportedVersion, match=r"sympy 1\.\d+\.\d+ is installed.*sympy >=9"):
        apply_generator_shims()
