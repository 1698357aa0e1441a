"""numsweep's shims of DeepMind's ``mathematics_dataset`` generator (its module-level names) and
of the sympy layout it expects, checked against mathematics_dataset 1.0.1 (`MATHEMATICS_DATASET`)
and sympy 1.14.0 (`SYMPY`); used by `trainables.data.mathgen` before it imports the generator.

Shims (`apply_generator_shims`: idempotent, no site-packages file edited)
------------------------------------------------------------------------
1. ``mathematics_dataset`` 1.0.1 (2019) imports ``base_solution_linear`` from
   ``sympy.solvers.diophantine``, which current sympy keeps in
   ``sympy.solvers.diophantine.diophantine``; without it the package does not import at all. The
   shim re-exports the function under its old name.
2. The generator picks variable names with ``random.choice(list(allowed))`` where ``allowed`` is a
   ``set`` of letters, whose order depends on the string hash seed (``PYTHONHASHSEED``, random per
   process; Ray workers are fresh processes). The same seed then gave different problems in
   different processes (algebra__*, polynomials__evaluate). The shim swaps the module's allowed-
   letter set for a set that iterates in sorted order: the same letters, drawn with the same
   probabilities, in a fixed order.
3. ``numbers__round_number`` calls ``random.randint`` with integral floats (e.g. -50.0, 49.0),
   deprecated since Python 3.10 (a DeprecationWarning per problem) and a TypeError from 3.12. The
   shim gives that generator module a ``random`` whose ``randint`` turns integral floats into ints
   before calling the real ``random.randint`` (the same draw Python 3.11 makes from them); every
   other attribute is the real ``random`` module's.

Two numpy 2 removals remain: ``np.object`` and ``ndarray.itemset``. ``itemset`` cannot be restored
(ndarray is a C type), and every module that can reach ``np.object`` (the ``*_composed`` modules,
polynomial manipulation) also reaches ``itemset`` on some of its draws, so those modules are left
out of `MODULES` and ``np.object`` is deliberately not shimmed (re-adding it would change numpy for
the whole process and make none of them usable).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

from compat.versions import CheckedRange, require

MATHEMATICS_DATASET = CheckedRange(
    "mathematics_dataset", "==1.0.1", checked="1.0.1", module="compat/mathgen_private.py"
)
SYMPY = CheckedRange("sympy", ">=1.13,<1.15", checked="1.14.0", module="compat/mathgen_private.py")


class _SortedLetters(set):
    """A set of letters that iterates (and so lists) in sorted order, whatever the hash seed."""

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set.__iter__(self)))

    def difference(self, *others: Any) -> _SortedLetters:
        # set.difference would return a plain set and lose the fixed order.
        return _SortedLetters(set.difference(self, *others))


class _RandomWithIntegralRandint:
    """Stands in for the ``random`` module inside one generator module (shim 3)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(random, name)

    @staticmethod
    def randint(low: int | float, high: int | float) -> int:
        return random.randint(_as_int_if_integral(low), _as_int_if_integral(high))


def _as_int_if_integral(value: int | float) -> int | float:
    # Non-integral floats stay floats, so random.randint still rejects them as before.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def check_versions() -> None:
    """UnsupportedVersion, naming the library, where mathematics_dataset or sympy is outside the
    range the shims were checked against."""
    require(MATHEMATICS_DATASET)
    require(SYMPY)


def apply_generator_shims() -> None:
    """Make ``mathematics_dataset`` importable with current sympy, independent of the string hash
    seed and free of float arguments to ``random.randint`` (idempotent; see the module doc).
    UnsupportedVersion, naming the library, outside `MATHEMATICS_DATASET`'s or `SYMPY`'s range."""
    check_versions()
    import sympy.solvers.diophantine  # noqa: F401  (loads the package into sys.modules)

    # `sympy.solvers.diophantine` as an attribute is the *function* diophantine, so the package
    # module must be taken from sys.modules.
    package = sys.modules["sympy.solvers.diophantine"]
    if not hasattr(package, "base_solution_linear"):
        implementation = sys.modules["sympy.solvers.diophantine.diophantine"]
        package.base_solution_linear = implementation.base_solution_linear

    from mathematics_dataset.util import composition

    if not isinstance(composition._ALLOWED_SYMBOLS, _SortedLetters):
        composition._ALLOWED_SYMBOLS = _SortedLetters(composition._ALLOWED_SYMBOLS)

    from mathematics_dataset.modules import numbers as numbers_module

    if not isinstance(numbers_module.random, _RandomWithIntegralRandint):
        numbers_module.random = _RandomWithIntegralRandint()
