"""The sanity gate of `analysis scaling` (analysis/scaling/gate.py) and the learning rate's place
in its grid (analysis/scaling/lr.py, rules.lr_position): on hand-written stores whose per-size
CEs are spelled out here, with the pooled seed sd and every step's drop recomputed with numpy in
the test, and on the committed study 2 store, whose U-shaped CE must fail."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.__main__ import main
from analysis.scaling import scaling
from analysis.scaling.gate import pooled_sd
from analysis.scaling.rules import lr_position
from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from records.layout import trial_row
from records.reader import open_store
from tests.analysis_fixtures import at

ROOT = Path(__file__).resolve().parents[3]
SIZES = {"a": 1e4, "b": 1e5, "c": 1e6, "d": 1e7}
LRS = (1e-3, 3e-3, 1e-2)


def write_store(root: Path, ce: dict[tuple[str, float, int], float]) -> Path:
    """One mle trial per (model, lr, seed) of `ce`, with its final eval/test/ce (step 100)."""
    rows, trials = [], []
    for k, ((model, lr, seed), value) in enumerate(sorted(ce.items())):
        trial = f"t{k}"
        rows += [
            (trial, 0, 0, "model/params_non_embedding", SIZES[model], at(k)),
            (trial, 0, 100, "eval/test/ce", value, at(k + 1)),
        ]
        config = trial_config(loss="mle", seed=seed, lr=lr, model=model, dataset="mathgen")
        trials.append(trial_row(trial, "TERMINATED", config, start=at(k), ts=at(k + 2)))
    write_metric_rows(root, "gate", rows)
    write_trial_states(root, "gate", trials)
    return root


# Per size the CE of seeds 0 and 1 at the middle lr (3e-3); the other lrs are 0.5 worse, so the
# middle one is chosen everywhere and lies inside its grid.
FALLING = {"a": (2.00, 2.04), "b": (1.60, 1.62), "c": (1.30, 1.26), "d": (1.00, 1.02)}


def grid(per_size: dict[str, tuple[float, float]], worse: float = 0.5) -> dict:
    out = {}
    for model, (s0, s1) in per_size.items():
        for lr in LRS:
            bump = 0.0 if lr == 3e-3 else worse
            out[(model, lr, 0)], out[(model, lr, 1)] = s0 + bump, s1 + bump
    return out


def table(result, name: str) -> pl.DataFrame:
    return next(t for t in result.tables if t.name == name).data


def expected_pooled_sd(per_size: dict[str, tuple[float, float]]) -> float:
    # Two seeds per size: the pooled variance is the mean of the sizes' sample variances.
    return float(np.sqrt(np.mean([np.var(v, ddof=1) for v in per_size.values()])))


def test_lr_position_by_hand() -> None:
    assert lr_position(3e-3, [1e-3, 3e-3, 1e-2]) == "inside"
    assert lr_position(1e-3, [1e-2, 1e-3, 3e-3]) == "lowest"
    assert lr_position(1e-2, [1e-3, 3e-3, 1e-2]) == "highest"
    assert lr_position(3e-3, [3e-3]) == "only one tried"
    assert lr_position(None, []) == "unknown"


def test_pooled_sd_matches_numpy() -> None:
    groups = [[1.0, 1.2, 0.9], [2.0, 2.5], [3.0]]  # the one-seed size adds no degree of freedom
    sds = [float(np.std(g, ddof=1)) if len(g) > 1 else None for g in groups]
    resid = np.concatenate([np.asarray(g) - np.mean(g) for g in groups[:2]])
    ref = np.sqrt(np.sum(resid**2) / (3 - 1 + 2 - 1))
    assert pooled_sd(sds, [len(g) for g in groups]) == pytest.approx(ref, rel=1e-12)
    assert pooled_sd([None, None], [1, 1]) is None


def test_gate_passes_when_ce_falls_and_lrs_are_inside(tmp_path: Path) -> None:
    result = scaling(open_store(write_store(tmp_path, grid(FALLING))))
    summary = table(result, "scaling_gate").row(0, named=True)
    sp = expected_pooled_sd(FALLING)
    assert summary["pooled_sd"] == pytest.approx(sp, rel=1e-9)
    means = [np.mean(v) for v in FALLING.values()]
    assert summary["ce_means"] == pytest.approx(means)
    steps = table(result, "scaling_gate_steps")
    assert steps["drop"].to_list() == pytest.approx(-np.diff(means))
    assert steps["threshold"].to_list() == pytest.approx([2 * sp] * 3)
    assert summary["passed"] and summary["lr_inside"] == 4 and result.settings["gate_passed"]
    assert result.header[2] == "sanity gate: PASS"
    lr = table(result, "scaling_lr")
    assert set(lr["lr"]) == {3e-3} and set(lr["lr_position"]) == {"inside"}
    assert not any(lr["lr_at_edge"])


def test_gate_fails_on_a_step_within_two_seed_sds(tmp_path: Path) -> None:
    close = {**FALLING, "c": (1.60, 1.58)}  # b → c falls by 0.02 < 2·s_pooled (0.037)
    result = scaling(open_store(write_store(tmp_path, grid(close))))
    sp = expected_pooled_sd(close)
    steps = table(result, "scaling_gate_steps")
    b_to_c = steps.filter(pl.col("from") == "b").row(0, named=True)
    assert b_to_c["drop"] == pytest.approx(1.61 - 1.59) and b_to_c["drop"] < 2 * sp
    assert steps["separated"].to_list() == [True, False, True]
    summary = table(result, "scaling_gate").row(0, named=True)
    assert not summary["passed"] and summary["steps_separated"] == 2
    assert result.header[2] == "sanity gate: FAIL"


def test_best_lr_at_the_grid_edge_is_flagged_and_fails_the_gate(tmp_path: Path) -> None:
    values = grid(FALLING)
    values[("d", 1e-2, 0)], values[("d", 1e-2, 1)] = 0.90, 0.92  # the largest rate wins at d
    result = scaling(open_store(write_store(tmp_path, values)))
    lr = table(result, "scaling_lr").sort("N")
    assert lr["lr_position"].to_list() == ["inside", "inside", "inside", "highest"]
    assert lr["lr_at_edge"].to_list() == [False, False, False, True]
    assert any("edge of its grid for 1 of 4 sizes: d (highest)" in n for n in result.notes)
    summary = table(result, "scaling_gate").row(0, named=True)
    assert summary["ce_falls"] and not summary["lr_ok"] and not summary["passed"]


def test_a_diverged_rate_counts_as_tried_and_worst(tmp_path: Path) -> None:
    # d's largest rate blew up (CE NaN at both seeds, inf at one): it was still tried, so d's
    # best (3e-3) lies inside its grid and the gate passes; the diverged rate is never chosen.
    values = grid(FALLING)
    values[("d", 1e-2, 0)], values[("d", 1e-2, 1)] = float("nan"), float("inf")
    values[("c", 1e-2, 0)] = float("nan")  # one seed of c's 1e-2 diverged, the other is worse
    result = scaling(open_store(write_store(tmp_path, values)))
    lr = table(result, "scaling_lr").sort("N")
    assert lr["lr"].to_list() == [3e-3] * 4
    assert lr["lr_position"].to_list() == ["inside"] * 4
    assert lr["lrs_tried"].to_list()[-1] == list(LRS)
    assert lr["mean"].to_list() == pytest.approx([np.mean(v) for v in FALLING.values()])
    assert table(result, "scaling_gate").row(0, named=True)["passed"]


def test_committed_study_2_store_fails_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    store = ROOT / "studies/scaling_cpu/results"
    assert main(["scaling", str(store), "--gate", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in doc["tables"]] == [
        "scaling_gate",
        "scaling_gate_steps",
        "scaling_gate_lr",
    ]
    rows = {(r["loss"], r["split"]): r for r in doc["tables"][0]["records"]}
    mle = rows[("mle", "test")]
    # Independently: final eval/test/ce per mle trial, mean per model, ordered by N.
    metrics = pl.read_parquet(store / "metrics", hive_partitioning=False)
    trials = pl.read_parquet(store / "trials").unique("trial_id", keep="last")
    final = (
        metrics.filter(pl.col("metric").is_in(["eval/test/ce", "model/params_non_embedding"]))
        .sort("step", "attempt", "ts")
        .group_by("trial_id", "metric")
        .last()
        .pivot(on="metric", index="trial_id", values="value")
        .join(trials.select("trial_id", "loss"), on="trial_id")
        .filter(pl.col("loss") == "mle")
        .group_by("model/params_non_embedding")
        .agg(pl.col("eval/test/ce").mean())
        .sort("model/params_non_embedding")
    )
    assert mle["ce_means"] == pytest.approx(final["eval/test/ce"].to_list(), rel=1e-12)
    # The U-shape issue 22 quotes (two decimals): CE falls to xs, then rises again.
    u_shape = [1.46, 1.17, 1.03, 0.88, 1.14, 1.39, 1.45]
    assert mle["ce_means"] == pytest.approx(u_shape, abs=0.006)
    assert not mle["passed"] and mle["steps_separated"] == 3 and mle["lr_inside"] == 0
    assert not doc["settings"]["gate_passed"]
    assert doc["header"][2] == "sanity gate: FAIL"


def test_one_size_fails_the_gate_and_says_why(tmp_path: Path) -> None:
    one = {k: v for k, v in grid(FALLING).items() if k[0] == "a"}
    result = scaling(open_store(write_store(tmp_path, one)))
    assert result.header[2:4] == [
        "sanity gate: FAIL",
        "gate loss=mle test: FAIL; one size (CE 2.02): nothing to scale",
    ]


def test_models_fits_only_the_sizes_named(tmp_path: Path) -> None:
    # d's CE rises above c's, so the four sizes fail the gate; a study that left d out (as study
    # 4 left out `s`) names the three it fits: the gate reads a, b, c alone and passes.
    values = grid({**FALLING, "d": [FALLING["c"][0] + 0.05, FALLING["c"][1] + 0.05]})
    store = open_store(write_store(tmp_path, values))
    assert not table(scaling(store), "scaling_gate").row(0, named=True)["passed"]
    result = scaling(store, models=("a", "b", "c"), gate_only=True)
    summary = table(result, "scaling_gate").row(0, named=True)
    assert summary["passed"] and summary["sizes"] == 3
    assert "--models: trials of d left out" in result.notes


def test_models_naming_a_size_the_store_lacks_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_store(tmp_path, grid(FALLING))
    assert main(["scaling", str(root), "--gate", "--models", "a,e"]) == 2
    err = capsys.readouterr().err
    assert "--models: no trial of e in the store (its models: a, b, c, d)" in err
