"""A sweep file's relative file paths made absolute against the directory numsweep runs in.

A trial's config crosses into Ray as JSON and is read by a Ray Train worker, which runs in a
working directory of its own (Ray Train V2's `WorkingDirectorySetupCallback` changes into the
run's local folder), so a relative path there names nothing, or something else: the driver's
preflight would find the file and every worker would then fail. Making the paths absolute once,
when the sweep file is loaded, gives the driver, its preflight, the manifest and every worker
the same files.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainables.config import SMOLLM2, TrialConfig

STDLIB = "{stdlib}"
"""`data.paths`' placeholder for the interpreter's standard library (already absolute)."""


def absolute(path: str, base: Path) -> str:
    """`path` (with `~` expanded) if absolute, else `base / path` normalised (`..` folded)."""
    expanded = Path(path).expanduser()
    return str(expanded) if expanded.is_absolute() else os.path.normpath(base / expanded)


def absolute_trial_paths(trial: TrialConfig, base: Path) -> TrialConfig:
    """`trial` with its file paths absolute against `base`: `data.path`, the `data.paths` globs,
    the `data.benchmarks` files, and `model.path` where it names a local directory under
    `base` (otherwise it is a hub id or `smollm2`, and stays as written)."""
    data = trial.data
    paths = [p if p.startswith(STDLIB) else absolute(p, base) for p in data.paths]
    data = data.model_copy(
        update={
            "path": None if data.path is None else absolute(data.path, base),
            "paths": paths,
            "benchmarks": {name: absolute(p, base) for name, p in data.benchmarks.items()},
        }
    )
    model = trial.model
    local = model.path is not None and model.path != SMOLLM2
    if local and (base / Path(model.path).expanduser()).is_dir():
        model = model.model_copy(update={"path": absolute(model.path, base)})
    return trial.model_copy(update={"data": data, "model": model})
