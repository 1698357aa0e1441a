"""Losses compared across scale through the scaling command (analysis/scaling/loss_comparison.py,
comparison_tables.py): on a points table with --group and --reference and on a store whose
groups are losses; each new option's bad input exits 2 naming it; the JSON of every new table
carries its rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis.__main__ import main, run
from analysis.report_figures import InteractiveFigures
from analysis.result import render
from analysis.scaling import TableColumns, scaling, scaling_points
from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.errors import ResultsError
from records.layout import trial_row
from records.reader import open_store
from tests.analysis.scaling.loss_tables import SIZES, loss_table, write_csv
from tests.analysis_fixtures import at

NEW_TABLES = (
    "scaling_exponent_test",
    "scaling_multipliers",
    "scaling_paired_differences",
    "scaling_paired_trend",
    "scaling_loss_to_loss",
)
FAST = ["--bootstrap", "200", "--fit-bootstrap", "10"]


@pytest.fixture(scope="module")
def losses_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_csv(tmp_path_factory.mktemp("losses") / "losses.csv", loss_table())


def test_a_table_compared_by_group_with_planned_sizes(losses_csv: Path) -> None:
    args = ["scaling", "--points", str(losses_csv), "--group", "loss_name"]
    args += ["--seed-column", "seed", "--reference", "mle", "--at", "1e11,1e12", *FAST]
    result, text, _ = run([*args, "--format", "json"])
    doc = json.loads(text)
    tables = {t["name"]: t for t in doc["tables"]}
    for name in NEW_TABLES:  # every new table carries its rows, shown and as numbers
        assert tables[name]["rows"] and len(tables[name]["rows"]) == len(tables[name]["records"])
    assert doc["settings"]["reference"] == "mle" and doc["settings"]["at"] == [1e11, 1e12]
    mult = tables["scaling_multipliers"]["records"]
    shared = next(r for r in mult if r["group"] == "del" and r["exponents"] == "shared")
    assert shared["low"] < (10 / 9) ** 5 < shared["high"]  # (A_del / A_mle)^(−1/b)
    planned = [r for r in mult if r["where"] == "planned" and r["exponents"] == "per group"]
    assert sorted({r["n"] for r in planned}) == [1e11, 1e12] and len(planned) == 4
    # A table's field fits are on: the saturating form's multipliers too, at the same N.
    saturating = [r for r in mult if r["exponents"] == "saturating"]
    assert len(saturating) == 2 * (6 + 2) and {r["ci_method"] for r in saturating} == {"bootstrap"}
    tests = {r["group"]: r for r in tables["scaling_exponent_test"]["records"]}
    assert set(tests) == {"del", "steep"}  # the reference is not compared with itself
    # Every loss has the reference's seeds at its sizes: a paired design, paired t-intervals.
    plain = [r for r in mult if r["exponents"] != "saturating"]
    assert {r["ci_method"] for r in [*plain, *tests.values()]} == {"t, paired"}
    assert tests["steep"]["low"] < 0.02 < tests["steep"]["high"] and tests["steep"]["p"] < 0.01
    trend = {r["group"]: r for r in tables["scaling_paired_trend"]["records"]}
    assert trend["steep"]["trend"] == "falls" and trend["steep"]["pairs"] == 24
    assert any("losses compared with --group loss_name mle" in h for h in doc["header"])
    text = render(result, "md")  # the same result as Markdown
    assert (
        "same exponent as the reference?" in text
        and "| loss | del | mle | shared | any N |" in text
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--group", "loss_name", "--reference", "adam"],
            "--reference adam: not a value of --group loss_name (its values: del, mle, steep)",
        ),
        (["--reference", "mle"], "--reference mle: the fits are not split by --group"),
        (["--group", "loss_name", "--reference", "mle", "--at", "0"], "--at must be positive"),
        (["--group", "loss_name", "--reference", "mle", "--at", "big"], "--at: 'big' is not"),
        (["--group", "loss_name", "--at", "1e9"], "--at gives multipliers against --reference"),
    ],
)
def test_new_options_exit_2_naming_the_value(losses_csv: Path, capsys, extra, message) -> None:
    assert main(["scaling", "--points", str(losses_csv), *FAST, *extra]) == 2
    assert message in capsys.readouterr().err


STORE_LOSSES = {"mle": "mle", "del": "del", "steep": "ntl_was"}
"""The store's loss of each law of loss_tables.LAWS."""


def write_losses_store(root: Path, seeds: int = 2) -> Path:
    """Trials of mle, del and ntl_was following loss_tables.LAWS' mle, del and steep (one noise
    draw per seed and size shared by the losses) at four sizes, `seeds` seeds each, written
    through the sweep's writer."""
    table = loss_table(seeds=seeds)
    keep = [i for i, n in enumerate(table["N"]) if n in SIZES[:4]]
    rows, trials = [], []
    for k, i in enumerate(keep):
        n, loss, seed = table["N"][i], table["loss_name"][i], table["seed"][i]
        trial = f"{loss}_n{SIZES.index(n)}_s{seed}"
        rows += [
            (trial, 0, 0, "model/params_non_embedding", n, at(k)),
            (trial, 0, 200, "eval/test/ce", table["loss"][i], at(k + 1)),
        ]
        params = {"alpha": 0.5} if loss == "del" else None
        name = STORE_LOSSES[loss]
        config = trial_config(loss=name, params=params, seed=seed, model=f"m{SIZES.index(n)}")
        trials.append(trial_row(trial, "TERMINATED", config, start=at(k), ts=at(k + 2)))
    write_metric_rows(root, "losses", rows)
    write_trial_states(root, "losses", trials)
    return root


def test_a_store_compares_its_losses(tmp_path: Path) -> None:
    store = open_store(write_losses_store(tmp_path))
    result = scaling(store, reference="mle", n_boot=200, metrics=("eval/test/ce",))
    names = [t.name for t in result.tables]
    assert set(NEW_TABLES) <= set(names)
    mult = next(t for t in result.tables if t.name == "scaling_multipliers").data
    shared = mult.filter((mult["group"] == "del") & (mult["exponents"] == "shared")).row(
        0, named=True
    )
    assert shared["low"] < (10 / 9) ** 5 < shared["high"]
    paired = next(t for t in result.tables if t.name == "scaling_paired_differences").data
    assert paired["pairs"].to_list() == [2] * 8  # two losses × four sizes, two seeds each
    assert np.all(paired.filter(paired["group"] == "del")["difference"].to_numpy() < 0)
    figure = result.figure_data["loss_comparison"][0]
    assert [c["name"] for c in figure["curves"]] == ["mle", "del", "ntl_was"]


def test_a_store_without_the_reference_loss_exits_2(tmp_path: Path, capsys) -> None:
    root = write_losses_store(tmp_path)
    assert main(["scaling", str(root), "--reference", "ntl", "--metrics", "eval/test/ce"]) == 2
    assert "--reference ntl: not a value of loss (its values: del, mle, ntl_was)" in (
        capsys.readouterr().err
    )


def test_the_report_draws_the_comparison(losses_csv: Path, tmp_path: Path) -> None:
    args = ["report", "--points", str(losses_csv), "--group", "loss_name", "--seed-column"]
    args += ["seed", "--reference", "mle", "--bootstrap", "200", "--fit-bootstrap", "10"]
    assert main([*args, "--at", "1e11,1e12", "-o", str(tmp_path / "png"), "--static"]) == 0
    png = tmp_path / "png" / "figures" / "loss_comparison.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    multipliers = (tmp_path / "png" / "tables" / "scaling_multipliers.csv").read_text()
    assert multipliers.count("planned") == 2 * 2 * 2  # del and steep at 2 sizes, plain and Huber
    # --at without --reference, or not a size: exit 2 naming it, before any file is written.
    plain = [a for a in args if a not in ("--reference", "mle")]
    for bad, said in (
        ([*plain, "--at", "1e11"], "name the reference"),
        ([*args, "--at", "-1"], "positive"),
    ):
        with pytest.raises(ResultsError, match=said):
            run([*bad, "-o", str(tmp_path / "bad")])
        assert main([*bad, "-o", str(tmp_path / "bad")]) == 2
        assert not (tmp_path / "bad").exists()
    # The interactive page's figure, from the same series (plotly, drawn into the page).
    result = scaling_points(
        losses_csv, TableColumns(group="loss_name", seed="seed"), reference="mle", n_boot=200
    )
    entries = result.figure_data["loss_comparison"]
    figure = InteractiveFigures(tmp_path / "page").comparison("cmp", "compared", entries, "t")
    assert 'id="fig-cmp"' in figure.html and "steep vs mle" in figure.html


def test_a_loss_split_by_its_parameter_is_compared_by_name_and_value(tmp_path: Path) -> None:
    # --by loss,alpha: del's rows carry alpha 0.5, mle's none; the groups are "del, alpha=0.5"
    # and "mle", compared with each other (alpha is part of a loss, not context).
    store = open_store(write_losses_store(tmp_path))
    result = scaling(
        store, reference="mle", by=("loss", "alpha"), n_boot=200, metrics=("eval/test/ce",)
    )
    tests = next(t for t in result.tables if t.name == "scaling_exponent_test").data
    assert sorted(tests["group"].to_list()) == ["del, alpha=0.5", "ntl_was"]
    with pytest.raises(ResultsError, match=r"its values: del, alpha=0.5, mle, ntl_was"):
        scaling(store, reference="del", by=("loss", "alpha"), metrics=("eval/test/ce",))
