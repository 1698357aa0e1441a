"""The versions of each library whose private API numsweep uses, as checked, and the check.

Each module of `compat` states the range of its library it was checked against (`CheckedRange`);
its named functions call `require` (a strict use: outside the range it fails, naming the library,
its installed version and the range) or `supported` (a guarded use: outside the range the
caller takes its documented fallback). `compat.check_installed()` runs every strict check at
once, before a sweep launches anything.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version


class UnsupportedVersion(RuntimeError):
    """An installed library is outside the range numsweep's use of its private API was checked
    against."""


@dataclass(frozen=True)
class CheckedRange:
    """The versions of `library` (its distribution name) that the uses in `module` were checked
    against: `spec` (a PEP 440 specifier set), `checked` the versions actually run."""

    library: str
    spec: str
    checked: str
    module: str

    def message(self, installed: str) -> str:
        return (
            f"{self.library} {installed} is installed, but numsweep's uses of {self.library}'s "
            f"private API ({self.module}) were checked against {self.library} {self.spec} "
            f"(run on {self.checked}): install {self.library} in that range, or check each use "
            f"in {self.module} against {installed} and widen the range there"
        )


@functools.cache
def installed_version(library: str) -> str:
    """The installed version of distribution `library` (its local part, `+cpu`, dropped)."""
    return Version(importlib.metadata.version(library)).public


@functools.cache
def supported(checked: CheckedRange) -> bool:
    """Whether the installed `checked.library` is in `checked.spec` (pre-releases count)."""
    spec = SpecifierSet(checked.spec, prereleases=True)
    return installed_version(checked.library) in spec


def require(checked: CheckedRange) -> None:
    """UnsupportedVersion, naming the library, its version and the range, unless it is in it."""
    if not supported(checked):
        raise UnsupportedVersion(checked.message(installed_version(checked.library)))
