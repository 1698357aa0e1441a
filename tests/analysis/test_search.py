"""The search command (analysis/search.py): the best trials and the Pareto front on the
hand-written 3-trial store (tests/analysis_fixtures.py), the importance table on a generated
store, the sweep's own objective as the default (the demo-shaped store), loss parameters judged
per loss, and objectives it cannot rank named.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from analysis.search import SearchSettings, search
from bench.synthetic_store import (
    generate_store,
    trial_config,
    write_metric_rows,
    write_trial_states,
)
from records.errors import ResultsError
from records.layout import trial_row
from records.reader import open_store
from tests.analysis.demo_stores import SAMPLED, write_demo_store
from tests.analysis_fixtures import at


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
    assert "fewer than 4 trials with objective values: no importance for loss, seed" in result.notes


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


def test_the_default_objective_is_the_sweeps_as_numsweep_status_ranks(tmp_path: Path) -> None:
    # The demo's manifest names eval/test/digit_acc (max): final 0.352 del > 0.345 mle > 0.333
    # dist2 > 0.321 ntl_was (tests/analysis/demo_stores.py); gen/macc would rank ntl_was first.
    store = open_store(write_demo_store(tmp_path))
    result = search(store)
    best = result.tables[0]
    assert [r[0] for r in best.rows] == ["1", "2", "3", "4"]
    assert [r["loss"] for r in best.data.iter_rows(named=True)] == [
        "del",
        "mle",
        "dist2",
        "ntl_was",
    ]
    assert "eval/test/digit_acc (max) (the sweep's, from the manifest of demo" in result.header[-1]
    by_macc = search(store, SearchSettings(objectives=("gen/macc",))).tables[0]
    assert by_macc.data["loss"][0] == "ntl_was"
    # Each loss's sampled parameters under their own names; another loss's are a dash.
    assert {"del.alpha", "del.decay_base", "ntl_was.alpha", "dist2.alpha"} <= set(best.columns)
    assert "alpha" not in best.columns
    row = best.data.row(0, named=True)
    assert row["del.alpha"] == SAMPLED["del"]["alpha"] and row["ntl_was.alpha"] is None
    cells = dict(zip(best.columns, best.rows[0], strict=True))
    assert cells["del.alpha"] == "0.161" and cells["ntl_was.alpha"] == "—"


def _two_loss_store(root: Path) -> Path:
    """Six del and six ntl_was trials in one `alpha` column: the objective rises with del's α
    (0.01 … 0.06 → 0.1 … 0.6) and falls with ntl_was's (0.3 … 0.8 → 0.6 … 0.1). Pooled, the
    two would blur into one ρ; per loss each is a perfect rank correlation."""
    rows, states = [], []
    for k in range(6):
        for j, loss in enumerate(("del", "ntl_was")):
            trial = f"{loss}_{k}"
            alpha = 0.01 * (k + 1) if loss == "del" else 0.3 + 0.1 * k
            objective = 0.1 * (k + 1) if loss == "del" else 0.6 - 0.1 * k
            rows.append((trial, 0, 100, "eval/test/digit_acc", objective, at(10 * k + j)))
            config = trial_config(loss=loss, params={"alpha": alpha}, seed=k)
            states.append(trial_row(trial, "TERMINATED", config, start=at(10 * k + j), ts=at(99)))
    write_metric_rows(root, "two", rows)
    write_trial_states(root, "two", states)
    return root


def test_a_loss_parameter_is_judged_over_its_own_losss_trials(tmp_path: Path) -> None:
    store = open_store(_two_loss_store(tmp_path))
    result = search(store, SearchSettings(objectives=("eval/test/digit_acc",)))
    importance = {r["parameter"]: r for r in result.tables[1].data.iter_rows(named=True)}
    assert "alpha" not in importance
    del_alpha, ntl_alpha = importance["del.alpha"], importance["ntl_was.alpha"]
    assert del_alpha["trials"] == ntl_alpha["trials"] == 6
    assert del_alpha["spearman_rho"] == pytest.approx(1.0)
    assert ntl_alpha["spearman_rho"] == pytest.approx(-1.0)
    # Exact: ρ = ±1 is 1 of the 6! = 720 orderings, so the two-sided p is 2/720.
    assert del_alpha["p"] == pytest.approx(2 / 720, rel=1e-12)
    assert del_alpha["p_method"] == "exact permutation"
    # Brute force over the orderings, independent of scipy's permutation_test.
    y = np.arange(1.0, 7.0)
    rhos = [stats.spearmanr(y, perm).statistic for perm in itertools.permutations(y)]
    assert ntl_alpha["p"] == pytest.approx(
        2 * min(np.mean(np.array(rhos) <= -1 + 1e-12), np.mean(np.array(rhos) >= -1 - 1e-12)),
        rel=1e-12,
    )
