"""Test-wide settings: this machine reaches no model hub, so the Hugging Face libraries are told
so up front (a hub id must then be in the local cache, else a clear error at once). And the
order files run in: longest first.

`make test` runs the files in two processes (pytest-xdist, `--dist loadfile`), handing each
process the next file as it finishes one. Left to itself xdist starts with the files of most
tests, which are the analysis package's quick ones, and ends on the few long Ray files, one
process running the last of them while the other idles. Longest first instead (the seconds
per file of a measured run, `tests/file_seconds.json`; a file not there counts as quick).

`golden`: the hand-written 3-trial store of tests/analysis_fixtures.py, written afresh for each
test (the reader's and the analysis's tests read it)."""

import json
import os
from pathlib import Path

import pytest

from tests.analysis_fixtures import write_golden_store

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seconds = json.loads(FILE_SECONDS.read_text())
    # A stable sort: the tests of a file stay together and in their order.
    items.sort(key=lambda item: -seconds.get(file_of(item), 0))


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return write_golden_store(tmp_path / "results")
