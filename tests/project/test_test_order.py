"""The suite's run order (tests/conftest.py): longest files first, by the seconds of a measured
run in tests/file_seconds.json."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.conftest import FILE_SECONDS, pytest_collection_modifyitems
from tests.sweep_runs import ROOT


@dataclass
class Item:
    """What the ordering reads of a collected test: its node id."""

    nodeid: str


def test_every_timed_file_is_a_test_file():
    seconds = json.loads(FILE_SECONDS.read_text())
    missing = [name for name in seconds if not (ROOT / name).is_file()]
    assert missing == [], f"{FILE_SECONDS.name} names files that are gone: {missing}"


def test_longest_files_come_first_and_each_file_keeps_its_order():
    seconds = json.loads(FILE_SECONDS.read_text())
    longest, second = sorted(seconds, key=lambda name: -seconds[name])[:2]
    ids = [
        "tests/a_new_test.py::test_x",
        f"{second}::test_b",
        f"{longest}::test_one",
        "tests/a_new_test.py::test_y",
        f"{longest}::test_two",
    ]
    items = [Item(i) for i in ids]
    pytest_collection_modifyitems(items)
    assert [item.nodeid for item in items] == [ids[2], ids[4], ids[1], ids[0], ids[3]]
