"""The search command (analysis/search.py): the best trials and the Pareto front on the
hand-written 3-trial store (tests/analysis_fixtures.py), the importance table on a generated
store, and objectives it cannot rank named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.search import SearchSettings, search
from bench.synthetic_store import (
    generate_store,
)
from records.errors import ResultsError
from records.reader import open_store


def test_golden_search_best_and_pareto(golden: Path) -> None:
    best = search(open_store(golden)).tables[0]
    # Default objective gen/macc (max): mle_s1 0.50 > del_s0 0.45 > mle_s0 0.40.
    assert [r[1] for r in best.rows] == ["mle_s1", "del_s0", "mle_s0"]
    assert best.columns[:4] == ["rank", "trial_id", "status", "gen/macc (max)"]
    # gen/macc (max) vs eval/test/ce (min), final values: mle_s0 (0.40, 1.00), mle_s1 (0.50,
    # 1.05), del_s0 (0.45, 0.90). del_s0 beats mle_s0 on both; mle_s1 and del_s0 trade off.
    result = search(open_store(golden), SearchSettings(objectives=("gen/macc", "eval/test/ce")))
    front = result.tables[0]
    assert front.name == "search_pareto"
    assert [r[0] for r in front.rows] == ["mle_s1", "del_s0"]
    assert "fewer than 4 trials with objective values: no importance table" in result.notes


def test_search_importance_finds_the_parameter_that_matters(tmp_path: Path) -> None:
    # In the generator macc grows with model size and barely depends on the seed.
    generate_store(tmp_path, losses=("mle",), seeds=(0, 1, 2, 3), seed=2)
    result = search(open_store(tmp_path))
    importance = result.tables[1].data.sort("eta_squared", descending=True)
    assert importance["parameter"].to_list() == ["model", "seed"]
    assert importance["eta_squared"][0] > 0.9 > 0.2 > importance["eta_squared"][1]


def test_bad_objectives_are_named(golden: Path) -> None:
    with pytest.raises(ResultsError, match="unknown metric 'gen/nope' for --objective"):
        search(open_store(golden), SearchSettings(objectives=("gen/nope",)))
    with pytest.raises(ResultsError, match="no known direction; write eval/test/digit_entropy:max"):
        search(open_store(golden), SearchSettings(objectives=("eval/test/digit_entropy",)))
