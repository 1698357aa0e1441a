"""Scaling laws from any table (`analysis scaling|predict|report --points FILE`): the committed
Chinchilla-like table end to end, seeds, groups and a FLOP column, every exit-2 case of a bad
table or option, and prediction from a store; N counted both ways on stores that know both."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.__main__ import main
from analysis.result import render
from analysis.scaling import scaling
from analysis.scaling.from_table import scaling_points
from analysis.scaling.predict import PredictSettings, predict
from analysis.scaling.table_points import TableColumns
from records.reader import open_store
from tests.analysis.scaling.synthetic_tables import (
    CHINCHILLA_LIKE,
    TRUTH,
    isoflop_table,
    law,
    write_csv,
)
from tests.analysis_fixtures import write_power_law_store


def tables(result) -> dict[str, pl.DataFrame]:
    return {t.name: t.data for t in result.tables}


def test_the_committed_table_is_the_generators(tmp_path: Path) -> None:
    write_csv(tmp_path / "t.csv", isoflop_table())
    assert (tmp_path / "t.csv").read_text() == CHINCHILLA_LIKE.read_text()


@pytest.fixture(scope="module")
def chinchilla() -> object:
    """`scaling --points` on the committed table, 200 resamples (~20 s)."""
    return scaling_points(CHINCHILLA_LIKE, n_boot_fit=200, budgets=(5.76e23,))


def test_points_table_gets_every_fit(chinchilla) -> None:
    t = tables(chinchilla)
    joint = t["scaling_joint"].row(0, named=True)
    assert joint["points"] == 240 and joint["bootstrap_resamples"] >= 190
    for name in ("E", "A", "alpha", "B", "beta"):
        assert joint[f"{name}_ci_low"] <= TRUTH[name] <= joint[f"{name}_ci_high"], name
    opt = t["scaling_optimal"].row(0, named=True)
    assert opt["C"] == 5.76e23 and opt["N_opt_ci_low"] < opt["N_opt"] < opt["N_opt_ci_high"]
    assert set(t["scaling_holdout"]["form"]) == {"plain", "huber", "joint"}
    assert t["scaling_power"]["axis"].to_list() == ["C"]  # scattered points: the C frontier
    assert t["scaling_joint_covariance"].height == 5
    assert any("480 line(s) of the table" in n for n in chinchilla.notes)
    for fmt, text in (
        ("md", "joint form"),
        ("latex", "joint form"),
        ("csv", "scaling_joint"),
        ("json", "scaling_joint"),
    ):
        assert text in render(chinchilla, fmt)
    assert chinchilla.settings["points"].endswith("chinchilla_like.csv")


def test_cli_scaling_predict_and_report_from_a_table(tmp_path: Path, capsys) -> None:
    assert (
        main(
            [
                "scaling",
                "--points",
                str(CHINCHILLA_LIKE),
                "--fit-bootstrap",
                "20",
                "--format",
                "json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert {"scaling_joint", "scaling_optimal"} <= {t["name"] for t in doc["tables"]}
    args = ["predict", "--points", str(CHINCHILLA_LIKE), "--n", "7e10", "--d", "1.4e12"]
    assert main([*args, "--fit-bootstrap", "100", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pred = next(t for t in doc["tables"] if t["name"] == "prediction")["records"][0]
    truth = law(7e10, 1.4e12)
    assert pred["pi_low"] <= truth <= pred["pi_high"]
    assert pred["predicted"] == pytest.approx(truth, rel=0.01)
    out = tmp_path / "report"
    report = ["report", "--points", str(CHINCHILLA_LIKE), "-o", str(out), "--fit-bootstrap", "20"]
    assert main([*report, "--static"]) == 0  # PNGs (the report is interactive by default)
    page = (out / "index.html").read_text()
    assert "compute-optimal" in page and "frontier.png" in page
    assert (out / "figures" / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    # where the joint fit misses (issue 58: flagged fits point to it), and a table's loss column
    # is not labelled as an evaluation split ("split other")
    assert (out / "figures" / "joint_residuals.png").read_bytes()[:4] == b"\x89PNG"
    assert "joint_residuals.png" in page and "split other" not in page
    assert sorted(p.name for p in (out / "figures").glob("scaling*.png")) == ["scaling_C.png"]
    assert (out / "tables" / "scaling_joint.csv").exists()


def test_scaling_names_columns_as_predict_does_and_keeps_the_old_flags(tmp_path, capsys) -> None:
    renamed = pl.read_csv(CHINCHILLA_LIKE).rename({"N": "params", "D": "tokens"})
    path = _write(tmp_path, renamed)
    joints = []
    for n_flag, d_flag in (("--n-col", "--d-col"), ("--n", "--d")):
        args = ["scaling", "--points", path, n_flag, "params", d_flag, "tokens"]
        assert main([*args, "--fit-bootstrap", "5", "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        joints.append(next(t for t in doc["tables"] if t["name"] == "scaling_joint")["records"])
    assert joints[0] == joints[1] and joints[0][0]["points"] == renamed.height
    predict_args = ["predict", "--points", path, "--n-col", "params", "--d-col", "tokens"]
    assert main([*predict_args, "--n", "7e10", "--d", "1.4e12", "--fit-bootstrap", "5"]) == 0


def _write(tmp_path: Path, frame: pl.DataFrame, name: str = "t.csv") -> str:
    path = tmp_path / name
    frame.write_csv(path) if name.endswith(".csv") else frame.write_parquet(path)
    return str(path)


@pytest.mark.parametrize(
    ("change", "extra", "message"),
    [
        (
            None,
            ["--n-col", "params"],
            "--n-col params: no such column in t.csv (its columns: N, D, loss)",
        ),
        (None, ["--n", "params"], "--n-col params: no such column in t.csv"),  # the old spelling
        (
            {"loss": [1.0, -2.0, 0.0, 3.0, 2.0, 1.5]},
            [],
            "--metric loss in t.csv: rows 2, 3 (2 of 6)",
        ),
        ({"N": [1e6, 1e6, 2e6, 2e6, 1e6, 2e6]}, [], "--n-col N in t.csv: 2 distinct value(s)"),
        ({"D": [1e9] * 6}, [], "--d-col D in t.csv: 1 distinct value(s)"),
        ({"N": ["a", "b", "c", "d", "e", "f"]}, [], "--n-col N in t.csv: not numbers"),
        (None, ["--metric", "acc"], "--metric acc: no such column"),
        (None, ["--models", "xs"], "--models: choose(s) trials of a store"),
        (None, ["--budgets", "lots"], "--budgets: 'lots' is not a number of FLOPs"),
        (None, ["--flops", "C"], "--flops C: no such column"),
    ],
)
def test_bad_tables_exit_2_naming_the_column_or_rows(tmp_path, capsys, change, extra, message):
    frame = pl.DataFrame(
        {
            "N": [1e6, 2e6, 4e6, 8e6, 1e6, 2e6],
            "D": [1e9, 2e9, 4e9, 1e9, 2e9, 4e9],
            "loss": [3.0, 2.5, 2.2, 2.4, 2.8, 2.3],
        }
    )
    if change:
        frame = frame.with_columns(**{k: pl.Series(v) for k, v in change.items()})
    assert main(["scaling", "--points", _write(tmp_path, frame), *extra]) == 2
    assert message in capsys.readouterr().err


def test_points_or_results_exactly_one(tmp_path: Path, capsys) -> None:
    assert main(["scaling"]) == 2
    assert "give RESULTS or --points FILE (exactly one)" in capsys.readouterr().err
    store = write_power_law_store(tmp_path / "store")
    assert main(["scaling", str(store), "--points", str(CHINCHILLA_LIKE)]) == 2
    assert main(["scaling", "--points", str(tmp_path / "t.txt")]) == 2
    assert "a .csv or .parquet file is needed" in capsys.readouterr().err
    assert main(["predict", "--points", str(CHINCHILLA_LIKE), "--n", "1e9"]) == 2
    assert "give the planned D" in capsys.readouterr().err


def test_seeds_groups_and_a_flop_column(tmp_path: Path) -> None:
    # Two groups with different laws, three seeds per cell on a 4 × 4 grid, FLOPs = 8·N·D.
    rng = np.random.default_rng(5)
    rows = []
    for group, scale in (("paper", 1.0), ("ours", 1.2)):
        p = {**TRUTH, "E": TRUTH["E"] * scale}
        for n in np.geomspace(1e8, 8e9, 4):
            for d in np.geomspace(2e9, 2e11, 4):
                for seed in range(3):
                    v = law(n, d, p) * np.exp(rng.normal(0, 0.003))
                    rows.append(
                        {
                            "g": group,
                            "params": n,
                            "tokens": d,
                            "s": seed,
                            "ce": v,
                            "flops": 8 * n * d,
                        }
                    )
    path = _write(tmp_path, pl.DataFrame(rows), "t.parquet")
    cols = TableColumns(n="params", d="tokens", metrics=("ce",), seed="s", group="g", flops="flops")
    result = scaling_points(path, cols, n_boot_fit=30)
    joint = tables(result)["scaling_joint"].sort("group")
    assert joint["group"].to_list() == ["ours", "paper"] and joint["points"].to_list() == [16, 16]
    assert joint["E"].to_list() == pytest.approx([1.2 * TRUTH["E"], TRUTH["E"]], rel=0.05)
    assert "C = 8·N·D" in " ".join(result.header)
    opt = tables(result)["scaling_optimal"]
    c = opt["C"].to_list()
    assert min(c) == pytest.approx(float(f"{8 * 8e9 * 2e11:.2g}"))  # the data's largest C
    # N lines per D: four each, every one with four sizes; D lines per N likewise.
    power = tables(result)["scaling_power"]
    assert power.filter(pl.col("axis") == "N")["sizes"].unique().to_list() == [4]


def test_predict_from_a_store_and_its_refusals(tmp_path: Path) -> None:
    from bench.synthetic_store import generate_store

    generate_store(
        tmp_path,
        losses=("mle",),
        seeds=(0, 1),
        sizes={"s": 1_000_000, "m": 4_000_000, "l": 16_000_000, "xl": 64_000_000},
        steps=(100, 200, 400, 800),
        noise=0.002,
        splits=("test",),
        benchmarks=(),
        seed=6,
    )
    d = 2e8
    result = predict(tmp_path, PredictSettings(n=1.28e8, d=d, n_boot=40))
    row = tables(result)["prediction"].row(0, named=True)
    assert row["metric"] == "eval/test/ce" and row["points"] == 16
    assert row["pi_low"] < row["predicted"] < row["pi_high"]
    held = tables(result)["scaling_holdout"].row(0, named=True)
    assert held["form"] == "joint" and held["held_out_points"] >= 1
    from records.errors import ResultsError

    with pytest.raises(ResultsError, match="give the planned D"):
        predict(tmp_path, PredictSettings(n=1e8, n_boot=5))
    fixed = write_power_law_store(tmp_path / "fixed", sizes=(1e6, 1e7, 1e8, 1e9))
    with pytest.raises(ResultsError, match="no D axis"):
        predict(fixed, PredictSettings(n=1e10, d=1e9, n_boot=5))
    at_n = tables(predict(fixed, PredictSettings(n=1e10, n_boot=20)))["prediction"].row(
        0, named=True
    )
    assert at_n["predicted"] == pytest.approx(3.0 * 1e10**-0.1, rel=0.02)


def test_n_counted_both_ways(tmp_path: Path) -> None:
    # Total = N + 5e6: the small sizes are mostly embeddings and log CE is no longer a line in
    # log N_total. At 8 sizes the total count's slope interval (t, 6 df) no longer reaches
    # −0.1 (exact under the non-embedding count): the conclusion changes with the count. At
    # 4 sizes the same curvature leaves a wide interval that covers −0.1: no verdict of change.
    sizes = tuple(np.geomspace(1e6, 1e9, 8))
    shifted = scaling(open_store(write_power_law_store(tmp_path / "a", sizes=sizes)))
    ce = tables(shifted)["scaling_param_counts"].sort("metric").row(0, named=True)
    assert ce["a_non_embedding"] == pytest.approx(-0.1)
    n = np.array(sizes)
    expected = np.polyfit(np.log(n + 5e6), np.log(3.0 * n**-0.1), 1)[0]
    assert ce["a_total"] == pytest.approx(expected, rel=1e-9)
    assert ce["embedding_share_smallest"] == pytest.approx(5e6 / (1e6 + 5e6))
    assert ce["a_total_ci_high"] < -0.1
    assert ce["verdict"] == "changes with the count (plain a: intervals apart)"
    assert any("changes with the count in 2 of 2" in h for h in shifted.header)
    few = write_power_law_store(tmp_path / "b", sizes=sizes[::2])
    assert set(tables(scaling(open_store(few)))["scaling_param_counts"]["verdict"]) == {
        "same within intervals"
    }
    # Total = 2·N: the same slope under both counts.
    doubled = write_power_law_store(tmp_path / "c", sizes=sizes, total=lambda v: 2 * v)
    same = tables(scaling(open_store(doubled)))["scaling_param_counts"]
    assert same["a_total"].to_list() == pytest.approx([-0.1, -0.1])
    assert set(same["verdict"]) == {"same within intervals"}
