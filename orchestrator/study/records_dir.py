"""Where a study keeps its own records in the results store, beside its experiments:
`<results>/study/<experiment>/registration.json` (written once, before the first main-stage
trial) and `looks.json` (one entry per look taken). Written atomically (a temporary file renamed
over), so an interrupted write leaves the old file or none. Local results folders only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from orchestrator.study.errors import StudyError


def study_dir(root: str, experiment: str) -> Path:
    """The study's folder under the results root `root`."""
    if "://" in root:
        raise StudyError(f"--results {root}: a study keeps its records in a local folder")
    return Path(root) / "study" / experiment


def read_json(path: Path) -> Any | None:
    """The JSON document at `path`, None when there is none; StudyError when unreadable."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise StudyError(f"{path}: unreadable ({err}); the study record is not rewritten") from err


def write_json(path: Path, doc: Any) -> None:
    """Write `doc` to `path` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
