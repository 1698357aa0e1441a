"""Generated mathematics problems: DeepMind's mathematics dataset generator (PyPI
`mathematics_dataset`) run in-process, as numsweep's embedded default data.

Splits
------
- ``train``: the generator's training modules (its full train entropy range, i.e. what its
  ``generate.py`` calls the "train" regime without the easy/medium/hard curriculum).
- ``test``: the generator's interpolation-test modules (``modules.test()``), held out from training.
- ``extrapolate``: the generator's extrapolation modules (``modules.test_extra()``: bigger numbers,
  longer expressions, different units). Only some modules have one (`EXTRAPOLATION`); the others
  are skipped in this split, and asking for it with none of them is an error.

How ``test`` is kept disjoint from ``train``
--------------------------------------------
Every prompt is assigned to exactly one side by a hash of its text (`is_held_out`): ``train``
keeps only prompts on the training side, ``test`` and ``extrapolate`` only prompts on the
held-out side, and problems on the wrong side are discarded and redrawn. So no evaluation prompt
can ever be a training prompt — for any seed, any ``n`` and any mix of modules — which a
"generate train, then drop its duplicates from test" scheme can only promise for one fixed train
size. Held-out splits also use their own derived seed. The price is that each side discards about
half of the raw draws (generation costs ~2x), and the split is by prompt text, so the generator's
distribution within each side is unchanged.

Difficulty
----------
``difficulty="full"`` (the default) is what is described above. ``"easy"``, ``"medium"`` and
``"hard"`` are the generator's own curriculum levels (its ``generate.py`` "train-easy/-medium/
-hard"): each module's training entropy range cut into thirds and the level's third kept, so
numbers are shorter and expressions simpler at lower levels. With a level, *every* split is drawn
from training samplers: ``train`` and ``test`` from that level (``test`` on the held-out side of
the partition: same distribution, disjoint prompts), and ``extrapolate`` from the next level up
(bigger numbers than anything trained on; from ``"hard"`` the generator's extrapolation modules,
as with ``"full"``). Every module then has an extrapolation split below ``"hard"``.

Like the generator's own ``sample_from_module``, problems whose question is longer than 160
characters or whose answer is longer than 30 are discarded and redrawn.

Determinism
-----------
The generator draws from python's global ``random`` and numpy's global RNG. Each (seed, split,
module) stream seeds both from a SHA-256-derived seed, and the callers' global RNG states are
restored afterwards, so `generate` neither depends on nor disturbs them (it is not thread-safe:
the global RNGs are shared). The same arguments give the same list in any process.

Library shims
-------------
``mathematics_dataset`` 1.0.1 (2019) needs three shims to import and draw deterministically with
current sympy and Python (`compat.mathgen_private.apply_generator_shims`, applied before the
generator is imported; what each does and why is there).
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from compat.mathgen_private import apply_generator_shims
from trainables.data.records import Record

Split = Literal["train", "test", "extrapolate"]
SPLITS: tuple[str, ...] = ("train", "test", "extrapolate")
Difficulty = Literal["full", "easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = ("full", "easy", "medium", "hard")
# The curriculum levels, as thirds of each module's training entropy range (the generator's own
# split into train-easy / -medium / -hard).
_LEVELS: dict[str, int] = {"easy": 0, "medium": 1, "hard": 2}
_N_LEVELS = 3

# The generator modules with numeric answers that run under numpy 2 (each checked over thousands
# of draws in every split). Left out: the `*_composed` variants and calculus__differentiate,
# polynomials__{add,coefficient_named,collect,compose,expand} (they crash in `ndarray.itemset`);
# modules whose answers are not one number (is_prime/is_factor: True/False; base_conversion and
# add_or_sub_in_base: numerals in other bases; list_prime_factors, comparison__sort: lists;
# comparison__closest/kth_biggest/pair: often a choice letter or True/False; measurement__time:
# clock times; simplify_surd, simplify_power, sequence_nth_term, polynomial_roots: expressions);
# and probability__* (numeric, but 20-30 ms per problem and ~0.5 s per extrapolation problem).
MODULES: tuple[str, ...] = (
    "arithmetic__add_or_sub",
    "arithmetic__add_sub_multiple",
    "arithmetic__mul",
    "arithmetic__div",
    "arithmetic__mul_div_multiple",
    "arithmetic__mixed",
    "arithmetic__nearest_integer_root",
    "numbers__round_number",
    "numbers__place_value",
    "numbers__gcd",
    "numbers__lcm",
    "numbers__div_remainder",
    "measurement__conversion",
    "algebra__linear_1d",
    "algebra__linear_2d",
    "algebra__sequence_next_term",
    "polynomials__evaluate",
)

# Module -> the generator's extrapolation module for it (names as in `modules.test_extra()`).
EXTRAPOLATION: dict[str, str] = {
    "arithmetic__add_or_sub": "arithmetic__add_or_sub_big",
    "arithmetic__add_sub_multiple": "arithmetic__add_sub_multiple_longer",
    "arithmetic__mul": "arithmetic__mul_big",
    "arithmetic__div": "arithmetic__div_big",
    "arithmetic__mul_div_multiple": "arithmetic__mul_div_multiple_longer",
    "arithmetic__mixed": "arithmetic__mixed_longer",
    "numbers__round_number": "numbers__round_number_big",
    "numbers__place_value": "numbers__place_value_big",
    "measurement__conversion": "measurement__conversion",
}

# The generator's own limits (generate_settings.MAX_QUESTION_LENGTH / MAX_ANSWER_LENGTH).
MAX_QUESTION_CHARS = 160
MAX_ANSWER_CHARS = 30

# What a failed draw of the generator raises (see `_draw`).
_GENERATOR_DRAW_ERRORS = (AssertionError, ValueError)

# Give up on a module after this many draws per requested problem: every module in MODULES
# accepts roughly half of its draws, so hitting this means something is badly wrong.
_MAX_DRAWS_PER_PROBLEM = 50

_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_FRACTION = re.compile(r"[+-]?\d+/\d+")


def parse_number(text: str) -> float | None:
    """The value of a plain numeric answer: "-3.2" -> -3.2, "3/4" -> 0.75; anything else
    (expressions, lists, letters, a zero denominator) -> None."""
    text = text.strip()
    if _DECIMAL.fullmatch(text):
        return float(text)
    if _FRACTION.fullmatch(text):
        numerator, denominator = text.split("/")
        if int(denominator) == 0:
            return None
        # float(Fraction) is the correctly rounded quotient, even for numerators beyond 2**53.
        return float(Fraction(int(numerator), int(denominator)))
    return None


def is_held_out(prompt: str) -> bool:
    """Which side of the train/held-out partition a prompt belongs to (half the prompt space each,
    fixed forever by the prompt's SHA-256)."""
    return hashlib.sha256(prompt.encode("utf-8")).digest()[0] >= 128


def generate(
    modules: Sequence[str], n: int, split: Split, seed: int, difficulty: Difficulty = "full"
) -> list[Record]:
    """``n`` problems from ``modules`` (names in `MODULES`), split as evenly as possible between
    them (the first ``n % len(modules)`` get one more) and interleaved round-robin in the given
    module order. For ``split="extrapolate"`` at difficulty "full" or "hard" only modules in
    `EXTRAPOLATION` take part (see the module doc for the levels). Records carry
    ``source="mathgen/<module>"`` (the requested name, also for extrapolation)."""
    active = _check_arguments(modules, n, split, seed, difficulty)
    base, extra = divmod(n, len(active))
    per_module = [
        _draw(module, base + (1 if index < extra else 0), split, seed, difficulty)
        for index, module in enumerate(active)
    ]
    interleaved: list[Record] = []
    for position in range(base + (1 if extra else 0)):
        interleaved.extend(records[position] for records in per_module if position < len(records))
    return interleaved


def _uses_extrapolation_modules(split: str, difficulty: str) -> bool:
    """Whether `split` is drawn from the generator's extrapolation modules (else from training or
    interpolation-test samplers, which every module has)."""
    return split == "extrapolate" and difficulty in ("full", "hard")


def _check_arguments(
    modules: Sequence[str], n: int, split: str, seed: int, difficulty: str
) -> list[str]:
    if isinstance(modules, str) or not isinstance(modules, Sequence):
        raise TypeError(f"modules must be a sequence of module names, got {modules!r}")
    if not modules:
        raise ValueError("modules is empty; choose from mathgen.MODULES")
    unknown = [name for name in modules if name not in MODULES]
    if unknown:
        raise ValueError(
            f"unknown or unsupported mathgen module(s) {unknown}; supported: {', '.join(MODULES)}"
        )
    duplicates = sorted({name for name in modules if list(modules).count(name) > 1})
    if duplicates:
        raise ValueError(f"mathgen module(s) listed twice: {duplicates}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")
    if not _uses_extrapolation_modules(split, difficulty):
        return list(modules)
    active = [name for name in modules if name in EXTRAPOLATION]
    if not active:
        raise ValueError(
            f"none of {list(modules)} has an extrapolation module; those that do: "
            f"{', '.join(EXTRAPOLATION)}"
        )
    return active


def _draw(module: str, count: int, split: str, seed: int, difficulty: str) -> list[Record]:
    """``count`` accepted problems from one module's own seeded stream."""
    if count == 0:
        return []
    from_extrapolation = _uses_extrapolation_modules(split, difficulty)
    generator_name = EXTRAPOLATION[module] if from_extrapolation else module
    sample = _generator_functions(split, difficulty)[generator_name]
    want_held_out = split != "train"
    records: list[Record] = []
    with _seeded_global_rngs(_derived_seed(seed, split, module, difficulty)):
        for _ in range(count * _MAX_DRAWS_PER_PROBLEM):
            try:
                problem = sample()
            except _GENERATOR_DRAW_ERRORS:
                # The generator's own sanity checks occasionally fail on a draw at the low end of
                # an entropy range (add_sub_multiple at "easy": `assert sample_args.entropy == 0`
                # after float round-off). Such a draw is discarded like an over-long one; the
                # RNG stream moves on identically, so the result stays deterministic.
                continue
            question, answer = str(problem.question), str(problem.answer)
            if len(question) > MAX_QUESTION_CHARS or len(answer) > MAX_ANSWER_CHARS:
                continue
            if is_held_out(question) != want_held_out:
                continue
            records.append(
                Record(
                    prompt=question,
                    answer=answer,
                    answer_value=parse_number(answer),
                    source=f"mathgen/{module}",
                )
            )
            if len(records) == count:
                return records
    raise RuntimeError(
        f"mathgen module {module!r} ({split}) produced only {len(records)} of {count} usable "
        f"problems in {count * _MAX_DRAWS_PER_PROBLEM} draws"
    )


def _derived_seed(seed: int, split: str, module: str, difficulty: str) -> int:
    # Each (seed, split, module, difficulty) gets an independent stream, so adding a module to a
    # mix does not change the problems drawn for the others, and train/test never share a stream.
    # "full" keeps the key it had before difficulties existed (the same problems as then).
    key = f"numsweep.mathgen/{seed}/{split}/{module}"
    if difficulty != "full":
        key += f"/{difficulty}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big")


@contextmanager
def _seeded_global_rngs(seed: int) -> Iterator[None]:
    python_state = random.getstate()
    numpy_state = np.random.get_state()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def _level_entropy(level: int) -> Callable[[tuple[float, float]], tuple[float, float]]:
    """The generator's curriculum: the `level`-th third of a module's training entropy range."""

    def restrict(entropy_range: tuple[float, float]) -> tuple[float, float]:
        low, high = entropy_range
        width = (high - low) / _N_LEVELS
        return (low + level * width, low + (level + 1) * width)

    return restrict


@functools.cache
def _generator_functions(split: str, difficulty: str = "full") -> dict[str, Callable[[], Any]]:
    """The generator's problem samplers for one split and difficulty, keyed "<area>__<module>"."""
    apply_generator_shims()
    from mathematics_dataset.modules import modules as generator_modules

    if _uses_extrapolation_modules(split, difficulty):
        tree = generator_modules.test_extra()
    elif difficulty != "full":
        level = _LEVELS[difficulty] + (1 if split == "extrapolate" else 0)
        tree = generator_modules.train(_level_entropy(level))
    elif split == "train":
        # The identity entropy function = the generator's single "train" regime (full range).
        tree = generator_modules.train(lambda entropy_range: entropy_range)
    else:
        tree = generator_modules.test()
    return {
        f"{area}__{name}": sampler
        for area, samplers in tree.items()
        for name, sampler in samplers.items()
    }
