"""What every analysis command's settings and result share: list fields frozen to tuples when a
settings object is made, and the result a command starts from (trials read, notes, header)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from analysis.result import Result
from records.reader import Store, current_trials


def freeze_lists(settings: Any, names: Iterable[str]) -> None:
    """In a frozen dataclass's `__post_init__`: the named fields given as lists become tuples,
    so the settings are hashable and cannot change."""
    for name in names:
        value = getattr(settings, name)
        if value is not None and not isinstance(value, tuple):
            object.__setattr__(settings, name, tuple(value))


def started_result(
    store: Store, settings: Any, name: str, title: str
) -> tuple[pl.DataFrame, Result]:
    """The trials of `settings.statuses` and the command's result so far: the store's and the
    trial reader's notes, the experiments line, the settings as JSON."""
    trials, notes = current_trials(store, settings.statuses)
    result = Result(name, title, notes=[*store.notes, *notes])
    result.header.append(f"experiments: {', '.join(store.experiments)}")
    result.settings = settings.as_json()
    return trials, result
