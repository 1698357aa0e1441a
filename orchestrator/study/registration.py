"""The registration record: what a study locked before its first main-stage trial ran.

It holds the study file's content (what the study and its sweep say, as validated; and the same
with every default filled in, `resolved`, for readers) and the content's hash, the
code revision (git HEAD, and whether the working tree had changes), the pilot's summary, the
design with its boundaries, and the time. It is written once, into the results store
(`<results>/study/<experiment>/registration.json`); from then on `numsweep study run` compares
the study file with it and refuses (exit 2, naming the keys) a file whose content changed.
Comments and layout of the YAML are not content: only what the file says is locked."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

from orchestrator.study.errors import StudyError
from orchestrator.study.pilot import PilotSummary
from orchestrator.study.records_dir import read_json, study_dir, write_json
from orchestrator.study.sizing import MainDesign
from orchestrator.study.study_file import Study

FILE = "registration.json"


def registration_path(root: str, study: Study) -> Path:
    return study_dir(root, study.experiment) / FILE


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=10,
            cwd=Path(__file__).resolve().parent,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def code_revision() -> dict[str, Any]:
    """git HEAD of numsweep's checkout and whether its working tree had changes."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "git_revision": _git("rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def register(root: str, study: Study, pilot: PilotSummary, design: MainDesign) -> dict[str, Any]:
    """Write the registration record (once); returns it."""
    record = {
        "study_file": str(study.path),
        "content_hash": study.content_hash(),
        "content": study.content(),
        "resolved": study.resolved(),
        "code": code_revision(),
        "pilot": pilot.as_json(),
        "design": design.as_json(),
        "registered_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    path = registration_path(root, study)
    if path.exists():
        raise StudyError(f"{path}: the study is registered already; it is never rewritten")
    write_json(path, record)
    return record


def read_registration(root: str, study: Study) -> dict[str, Any] | None:
    return read_json(registration_path(root, study))


def changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two JSON documents."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys: list[str] = []
        for key in sorted(set(old) | set(new)):
            keys += changed_keys(old.get(key), new.get(key), f"{prefix}{key}.")
        return keys
    return [] if old == new else [prefix.rstrip(".")]


def check_unchanged(record: dict[str, Any], study: Study, root: str) -> None:
    """StudyError naming what changed when the study file no longer says what was registered."""
    if record["content_hash"] == study.content_hash():
        return
    changed = changed_keys(record["content"], study.content())
    raise StudyError(
        f"{study.path}: the study was registered at {record['registered_at']} "
        f"({registration_path(root, study)}) and its file has changed since: "
        f"{', '.join(changed) or 'content'}. A registered study runs as registered: put the "
        "file back, or start a new study (another sweep experiment name)"
    )
