"""Per-trial curve summaries (`--value last:K`, `auc`, `auc:FROM-TO`, `steps_to:X`,
analysis/curve_summaries.py): each against a hand computation from the fixture's values (numpy
means, `numpy.trapezoid`, linear interpolation written out here), through `select_values`, the
ablation and the CLI, including a target never reached and bad summary text (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.__main__ import main
from analysis.ablation import AblationSettings, ablation
from analysis.selection import ValueSpec, parse_value, parse_values, select_values
from records.reader import open_store, read_latest
from tests.analysis.curve_fixtures import ACC, CE, ENT, write_curve_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return write_curve_store(tmp_path_factory.mktemp("curves") / "results")


def picked(store, text: str, metric: str) -> dict[str, float | None]:
    latest, _ = read_latest(open_store(store.root), [metric])
    out = select_values(latest, parse_value(text))
    return dict(out.select("trial_id", "value").iter_rows())


def crossing(steps, values, target, sign=1.0) -> float | None:
    """First step where sign·(v − target) ≥ 0, linearly interpolated from the evaluation
    before: written independently of the polars code."""
    for i, v in enumerate(values):
        if sign * (v - target) >= 0:
            if i == 0:
                return float(steps[0])
            v0, s0 = values[i - 1], steps[i - 1]
            return s0 + (target - v0) / (v - v0) * (steps[i] - s0)
    return None


def test_parse_and_labels() -> None:
    assert parse_value("last:3") == ValueSpec("last", count=3)
    assert parse_value("auc") == ValueSpec("auc")
    assert parse_value("auc:100-300") == ValueSpec("auc", start=100, end=300)
    assert parse_value("steps_to:0.5") == ValueSpec("steps_to", target=0.5)
    assert [s.label for s in parse_values(["final,last:3", "auc:100-300,steps_to:0.5"])] == [
        "final",
        "last 3",
        "auc 100-300",
        "steps to 0.5",
    ]
    for bad in ("last:0", "last:x", "auc:300-100", "auc:1", "steps_to:x", "steps_to:nan", "mean"):
        with pytest.raises(ValueError, match="--value must be one of"):
            parse_value(bad)


def test_last_k_auc_and_range(store) -> None:
    steps = np.array(store.steps, dtype=float)
    for text, expect in [
        ("last:3", lambda v: np.mean(v[-3:])),
        ("last:1", lambda v: v[-1]),
        ("auc", lambda v: np.trapezoid(v, steps) / (steps[-1] - steps[0])),
        # steps 100..300: the evaluations inside the range only
        ("auc:100-300", lambda v: np.trapezoid(v[1:4], steps[1:4]) / 200),
        ("auc:150-250", lambda v: v[2]),  # one evaluation in range: its value
    ]:
        got = picked(store, text, ACC)
        for (loss, seed, metric), vals in store.values.items():
            if metric == ACC:
                assert got[f"{loss}_s{seed}"] == pytest.approx(expect(np.array(vals))), text


def test_last_k_longer_than_the_curve_gives_no_value(store) -> None:
    assert picked(store, "last:6", ACC) == {}


def test_steps_to_interpolates_and_reports_never_reached(store) -> None:
    got = picked(store, "steps_to:0.5", ACC)
    for (loss, seed, metric), vals in store.values.items():
        if metric == ACC:
            assert got[f"{loss}_s{seed}"] == pytest.approx(crossing(store.steps, vals, 0.5))
    # reached at the first evaluation: that step
    assert set(picked(store, "steps_to:0.0", ACC).values()) == {0.0}
    # CE is better lower: it crosses 1.2 on its way down
    got = picked(store, "steps_to:1.2", CE)
    for (loss, seed, metric), vals in store.values.items():
        if metric == CE:
            want = crossing(store.steps, vals, 1.2, sign=-1.0)
            assert got[f"{loss}_s{seed}"] == (pytest.approx(want) if want is not None else None)
    # never reached: a null value, not a missing row
    never = picked(store, "steps_to:0.99", ACC)
    assert len(never) == 10 and set(never.values()) == {None}
    # digit entropy has no better direction: no steps_to rows at all
    assert picked(store, "steps_to:1.0", ENT) == {}


def test_steps_to_skips_non_finite_values() -> None:
    latest = pl.DataFrame(
        {
            "experiment": ["e"] * 4,
            "trial_id": ["t"] * 4,
            "metric": [ACC] * 4,
            "step": [0, 100, 200, 300],
            "value": [0.1, float("nan"), 0.6, 0.7],
        }
    )
    out = select_values(latest, parse_value("steps_to:0.5"))
    # NaN never reaches; the hit after a NaN has no finite neighbour: its own step
    assert out["value"].to_list() == [200.0]


def test_ablation_counts_censored_trials(tmp_path: Path) -> None:
    def curves(loss, seed, rng):
        # mle seeds 0-2 reach 0.5, seeds 3-4 stall at 0.4; del all reach it
        top = 0.4 if loss == "mle" and seed >= 3 else 0.6
        acc = [0.1, 0.2, 0.3 + 0.01 * seed, top - 0.05, top]
        return {ACC: acc}

    s = write_curve_store(tmp_path / "r", curves=curves)
    result = ablation(
        open_store(s.root), AblationSettings(metrics=[ACC], values=[parse_value("steps_to:0.5")])
    )
    rec = {r["arm"]: r for r in result.tables[0].data.to_dicts()}
    assert rec["mle"]["n"] == 3 and rec["del"]["n"] == 5
    # fewer steps is better: the smaller mean is marked best
    means = {a: r["mean"] for a, r in rec.items()}
    best = min(means, key=means.get)
    assert rec[best]["best"] is True
    assert rec["del"]["n_pairs"] == 3  # the pairs both reached
    note = next(n for n in result.notes if n.startswith("steps to 0.5"))
    assert "2 trial value(s) missing, never reached 0.5" in note
    cells = result.tables[0].rows
    assert any("(n=3)" in c for row in cells for c in row)


def test_ablation_notes_trials_with_too_few_evaluations(store) -> None:
    # Every trial has 5 evaluations: last:6 has no value for any (the note was once built for
    # every summary kind at once and failed on steps_to's missing target).
    result = ablation(
        open_store(store.root), AblationSettings(metrics=[ACC], values=[parse_value("last:6")])
    )
    note = next(n for n in result.notes if n.startswith("last 6"))
    assert "10 trial value(s) missing, fewer than 6 evaluations" in note


@pytest.mark.parametrize("command", ["ablation", "search", "scaling", "power"])
def test_bad_summary_exits_2_naming_value(store, command, capsys) -> None:
    extra = ["--delta", "0.02"] if command == "power" else []
    assert main([command, str(store.root), "--value", "last:zero", *extra]) == 2
    assert "--value" in capsys.readouterr().err


def test_every_command_takes_the_new_summaries(store, capsys) -> None:
    root = str(store.root)
    assert main(["ablation", root, "--value", "last:2,auc", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["value_kind"] for t in doc["tables"] for r in t["records"]} == {"last 2", "auc"}
    assert main(["search", root, "--objective", f"{ACC}:max", "--value", "auc"]) == 0
    assert "value per trial: auc" in capsys.readouterr().out
