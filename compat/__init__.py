"""The one home of numsweep's uses of libraries' private APIs: each behind a named function, with
the version range of its library it was checked against (`compat.versions.CheckedRange`).

    ray_private          Ray 2.60: Tune's session queues and usage tagging, Train V2's errors and
                         report log, OptunaSearch's trials, the W&B callback's logging actors,
                         the driver's output dispatcher, the loopback switch, worker niceness,
                         the CLI's worker-node refusal
    ray_trainer          Ray 2.60: the TorchTrainer without Train V2's Ray Data callback
    deepspeed_private    DeepSpeed 0.19: its import without MLflow, the one-rank all-reduce switch
    torch_private        torch 2.13: inductor's and AOT-autograd's caches (guarded: torch is not
                         pinned above its floor, so outside the range the defaults stay)
    mathgen_private      mathematics_dataset 1.0.1 and sympy 1.14: the generator's three shims
    absent_imports       importing a module with some of its optional imports marked absent

Ray, DeepSpeed, mathematics_dataset and sympy uses are strict: outside the range the function
raises `UnsupportedVersion` naming the library, its version and the range. `check_installed()`
runs all four checks at once: `numsweep sweep` and `extend` call it before anything is launched
(sympy was checked only where the generator's shims were applied, which on a cluster is inside
a trial). torch's use is guarded: outside its range the caches keep torch's defaults, so it is
no reason to refuse a sweep. pyproject.toml's requirement of each of these five libraries is
exactly its range here (`checked_ranges()`; tests/project/test_dependency_ranges.py compares
them), so pip installs nothing the checks would refuse.
Nothing else in numsweep imports a library's private module (tests/compat/test_private_uses.py).
It imports no other numsweep package.
"""

from __future__ import annotations

from compat.versions import CheckedRange, UnsupportedVersion, require


def strict_ranges() -> tuple[CheckedRange, ...]:
    """The ranges of the libraries whose uses fail outside them."""
    from compat.deepspeed_private import DEEPSPEED
    from compat.mathgen_private import MATHEMATICS_DATASET, SYMPY
    from compat.ray_private import RAY

    return (RAY, DEEPSPEED, MATHEMATICS_DATASET, SYMPY)


def checked_ranges() -> tuple[CheckedRange, ...]:
    """Every range: the strict ones and torch's (guarded)."""
    from compat.torch_private import TORCH

    return (*strict_ranges(), TORCH)


def check_installed() -> None:
    """UnsupportedVersion for the first strict library installed outside its checked range."""
    for checked in strict_ranges():
        require(checked)


__all__ = [
    "CheckedRange",
    "UnsupportedVersion",
    "check_installed",
    "checked_ranges",
    "strict_ranges",
]
