"""The entropy command (analysis/entropy.py) on the hand-written 3-trial store: its curves and
final-value table, the expected cells derived by arithmetic from tests/analysis_fixtures.py.
"""

from __future__ import annotations

from pathlib import Path

from analysis.entropy import entropy
from analysis.result import table_markdown
from records.reader import open_store
from tests.analysis.table_cells import md_rows, pm2


def test_golden_entropy_curves(golden: Path) -> None:
    result = entropy(open_store(golden))
    curves = next(t for t in result.tables if t.name == "entropy_test")
    assert curves.columns == ["arm", "step", "seeds", "digit_entropy", "digit_acc"]
    assert md_rows(table_markdown(curves)) == [
        ["mle", "0", "2", pm2(2.3, 2.3), pm2(0.10, 0.12)],
        ["mle", "100", "2", pm2(1.0, 1.1), pm2(0.50, 0.70)],
        ["mle", "200", "2", pm2(0.9, 0.8), pm2(0.60, 0.64)],
        ["del", "0", "1", "2.3", "0.11"],
        ["del", "100", "1", "0.7", "0.55"],
        ["del", "200", "1", "0.5", "0.75"],
    ]
    # identical seeds: a zero-width interval, not a missing one
    assert md_rows(table_markdown(curves))[0][3] == "2.3 ± 0"
    final = next(t for t in result.tables if t.name == "entropy_final_test")
    assert final.columns == ["arm", "seeds", "digit_entropy", "digit_acc"]
    assert md_rows(table_markdown(final))[1] == ["del", "1", "0.5", "**0.75**"]
