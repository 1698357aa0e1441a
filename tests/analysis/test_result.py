"""analysis.result: the layout helpers every command's tables go through."""

from __future__ import annotations

from analysis.result import DASH, pivot_rows


def test_pivot_rows_places_each_record_in_its_cell_and_marks_from_the_record() -> None:
    # Two arms x two metrics, one record missing (b, y) and one for an arm not shown (c, x).
    records = [
        {"arm": "a", "metric": "x", "mean": 1.0, "best": True},
        {"arm": "a", "metric": "y", "mean": 2.0, "best": False},
        {"arm": "b", "metric": "x", "mean": 3.0, "best": False},
        {"arm": "c", "metric": "x", "mean": 9.0, "best": True},
    ]
    rows, marked = pivot_rows(
        records,
        {"b": ["b", "2"], "a": ["a", "3"]},  # row order as given, with leading cells
        ["x", "y"],
        at=lambda r: (r["arm"], r["metric"]),
        cell=lambda r: f"{r['mean']:.1f}",
        mark=lambda r: r["best"],
    )
    assert rows == [["b", "2", "3.0", DASH], ["a", "3", "1.0", "2.0"]]
    assert marked == {(1, 2)}  # a's x cell: row 1, column 2 (after two leading cells)


def test_pivot_rows_missing_text_can_name_its_cell() -> None:
    rows, marked = pivot_rows(
        [],
        {"a": ["a"]},
        ["x"],
        at=lambda r: (r["arm"], r["metric"]),
        cell=str,
        missing=lambda row, column: f"no {row}/{column}",
    )
    assert rows == [["a", "no a/x"]] and marked == set()
