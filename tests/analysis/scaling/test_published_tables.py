"""The joint fit on two published tables (tests/analysis/scaling/data): the data-constrained
study's C4 runs (Muennighoff et al. 2023, huggingface/datablations; `fit_set` marks the 62 runs
of its fit, 39 distinct (N, D) cells) and the over-training study's runs (Gadre et al. 2024,
mlfoundations/scaling; `held_out` marks its 1.4B and 6.9B runs).

Golden values come from an independent fit written here: scipy's Nelder–Mead on the Huber
objective Σ Huber_δ(log(e^e + e^(a − α·log N) + e^(b − β·log D)) − log L), summed in plain
numpy, from a small grid of starts (analysis/scaling/robust_fit.py minimises it by
least_squares from its own grid). The resampling checks compare against what the cells are:
a table whose repeated cells are not declared seeds gives the same intervals as its one row
per cell means, and every resample is accounted for.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import optimize

from analysis.__main__ import main
from analysis.scaling.cells import CELLS, CELLS_AND_SEEDS, Cells
from analysis.scaling.flags import fit_flags
from analysis.scaling.forms import JointForm
from analysis.scaling.holdout import missed
from analysis.scaling.joint import bootstrap_joint
from analysis.scaling.points import lines
from analysis.scaling.table_points import TableColumns, TableFilter, table_values

DATA = Path(__file__).parent / "data"
DATABLATIONS = DATA / "datablations_c4.csv"
GADRE = DATA / "gadre_overtraining.csv"
DELTA = 1e-3


def _fit_set() -> pl.DataFrame:
    return pl.read_csv(DATABLATIONS).filter(pl.col("fit_set") == 1)


def _c4_runs() -> pl.DataFrame:
    return pl.read_csv(GADRE).filter((pl.col("dataset") == "c4") & (pl.col("held_out") == 0))


def _arrays(t: pl.DataFrame) -> tuple[np.ndarray, ...]:
    return tuple(t[c].to_numpy().astype(np.float64) for c in ("N", "D", "loss"))


def independent_fit(n, d, m, tie: bool = False) -> tuple[np.ndarray, float]:
    """The Huber optimum by Nelder–Mead from a grid (module docstring): θ = (e, a, α, b, β)."""
    xn, xd, y = np.log(n), np.log(d), np.log(m)

    def theta(x):
        return np.r_[x[:4], x[2]] if tie else x

    def loss(x):
        e, a, alpha, b, beta = theta(x)
        r = np.logaddexp(e, np.logaddexp(a - alpha * xn, b - beta * xd)) - y
        h = np.where(np.abs(r) <= DELTA, 0.5 * r * r, DELTA * (np.abs(r) - 0.5 * DELTA))
        return float(h.sum())

    best = None
    for e, x, ab in itertools.product((0.0, 0.5), (0.2, 0.4), (5.0, 10.0)):
        start = np.array([e, ab, x, ab, x])[: 4 if tie else 5]
        for _ in range(3):  # restarts: Nelder–Mead's simplex collapses in narrow valleys
            res = optimize.minimize(
                loss,
                start,
                method="Nelder-Mead",
                options={"xatol": 1e-10, "fatol": 1e-16, "maxiter": 40_000, "maxfev": 40_000},
            )
            start = res.x
        if best is None or res.fun < best.fun:
            best = res
    return theta(best.x), float(best.fun)


def test_datablations_fit_matches_an_independent_fit() -> None:
    n, d, m = _arrays(_fit_set())
    cells = Cells.of(n, d, m)
    boot = bootstrap_joint(cells, n_boot=20, seed=0)
    ref, ref_loss = independent_fit(cells.n, cells.d, cells.means())
    assert boot.fit.converged
    assert boot.fit.loss <= ref_loss * (1 + 1e-6)
    assert boot.fit.loss == pytest.approx(ref_loss, rel=1e-4)
    assert boot.fit.alpha == pytest.approx(ref[2], abs=2e-3)
    assert boot.fit.beta == pytest.approx(ref[4], abs=2e-3)
    assert pytest.approx(np.exp(ref[0]), rel=1e-2) == boot.fit.E


def test_repeated_cells_without_declared_seeds_are_points_and_intervals_do_not_collapse() -> None:
    t = _fit_set()
    n, d, m = _arrays(t)
    raw = Cells.of(n, d, m)
    assert raw.size == 39 and raw.repeated == 7 and raw.scheme == CELLS
    assert "7 cell(s) repeat with no seeds declared" in raw.how(200, 0)
    one_per_cell = Cells.of(raw.n, raw.d, raw.means())
    a = bootstrap_joint(raw, n_boot=100, seed=0)
    b = bootstrap_joint(one_per_cell, n_boot=100, seed=0)
    # The 62 rows and their 39 cell means are one design: the same intervals.
    for j in range(5):
        assert a.interval(j, 0.95) == pytest.approx(b.interval(j, 0.95), rel=1e-6)
    # Redrawing only the seeds of the 7 repeated cells gave α [0.360, 0.365] (issue 58); over
    # the cells the interval is wide.
    lo, hi = a.interval(2, 0.95)
    assert hi - lo > 0.05 and lo < a.fit.alpha < hi
    # Every resample is accounted for.
    assert a.degenerate + a.not_converged + a.draws.shape[0] == 100
    # Declared seeds (the runs `seed` 1-4 of one cell): cells and seeds both redrawn.
    seeded = Cells.of(n, d, m, seeded=True)
    assert seeded.scheme == CELLS_AND_SEEDS
    assert "declared seeds" in seeded.how(200, 0)


def test_columns_not_declared_are_named_and_strict_refuses(tmp_path: Path) -> None:
    path = tmp_path / "fit_set.csv"
    _fit_set().write_csv(path)
    data = table_values(path, TableColumns())
    note = next(x for x in data.notes if "columns not declared" in x)
    assert "U (7 of 39 cells" in note and "epochs (7 of 39 cells" in note
    assert not data.seeded
    with pytest.raises(Exception, match=r"--strict: columns not declared.*U \(7 of 39"):
        table_values(path, TableColumns(), TableFilter(strict=True))
    # A tokens column not named D, --d not given: the fit is on N alone and the tokens are
    # named as what varies within each N.
    tokens = tmp_path / "tokens.csv"
    _c4_runs().rename({"D": "tokens"}).write_csv(tokens)
    note = next(x for x in table_values(tokens, TableColumns()).notes if "not declared" in x)
    assert "N (no D axis)" in note and "tokens (" in note and "multiplier (" in note
    declared = table_values(tokens, TableColumns(d="tokens"))
    assert not [x for x in declared.notes if "tokens (" in x]


def test_tied_and_fixed_forms_on_the_over_training_runs() -> None:
    n, d, m = _arrays(_c4_runs())
    cells = Cells.of(n, d, m)
    tied = bootstrap_joint(cells, n_boot=20, seed=0, form=JointForm(tie=True))
    ref, ref_loss = independent_fit(cells.n, cells.d, cells.means(), tie=True)
    assert tied.fit.alpha == tied.fit.beta
    assert tied.fit.loss <= ref_loss * (1 + 1e-6)
    assert tied.fit.alpha == pytest.approx(ref[2], abs=2e-3)
    assert tied.draws.shape[0] > 0 and np.allclose(tied.draws[:, 2], tied.draws[:, 4])
    free = bootstrap_joint(cells, n_boot=5, seed=0)
    assert free.fit.loss <= tied.fit.loss * (1 + 1e-9)  # the nested form fits no better
    fixed = bootstrap_joint(cells, n_boot=20, seed=0, form=JointForm(fixed=(("E", 1.5),)))
    assert pytest.approx(1.5, rel=1e-12) == fixed.fit.E
    assert np.allclose(fixed.draws[:, 0], 1.5)
    assert "fixed E = 1.5" in fixed.form.label()


def test_a_fit_whose_floor_is_above_a_reached_loss_is_flagged() -> None:
    n, d, m = _arrays(_c4_runs())
    cells = Cells.of(n, d, m)
    # E held above the lowest loss the largest budget reached: the law says it cannot be.
    high = float(cells.means().min()) + 0.2
    boot = bootstrap_joint(cells, n_boot=10, seed=0, form=JointForm(fixed=(("E", high),)))
    flags = fit_flags(boot, {"inside": None}, 6.0)
    assert any(f.startswith(f"E {high:.4g} above the loss") for f in flags)
    free = bootstrap_joint(cells, n_boot=10, seed=0)
    assert not [f for f in fit_flags(free, {"inside": None}, 6.0) if "above the loss" in f]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--fix", "gamma=1"], "unknown parameter 'gamma'"),
        (["--fix", "E=-1"], "E must be positive"),
        (["--huber-delta", "-1"], "--huber-delta must be a positive number"),
        (["--where", "colour=red"], "--where colour: no such column"),
        (["--where", "dataset=nowhere"], "no row of"),
        (["--weights", "nothing"], "nothing"),
        (["--strict"], "--strict: columns not declared"),
    ],
)
def test_form_and_row_options_exit_2_naming_the_value(capsys, extra, message) -> None:
    assert main(["scaling", "--points", str(GADRE), "--fit-bootstrap", "2", *extra]) == 2
    assert message in capsys.readouterr().err


def test_held_out_miss_is_judged_against_chance() -> None:
    # P(X ≥ k) for X ~ Binomial(K, 0.05), by hand: one of one outside, 0.05 (a miss); two of
    # 24, 1 − 0.95^24 − 24·0.05·0.95^23 = 0.339 (chance); five of 24, 0.0060 (a miss).
    assert missed({"inside": 0, "held_out_points": 1}, 0.95) is True
    assert missed({"inside": 22, "held_out_points": 24}, 0.95) is False
    assert missed({"inside": 19, "held_out_points": 24}, 0.95) is True
    assert missed({"inside": 24, "held_out_points": 24}, 0.95) is False
    assert missed({"inside": None, "held_out_points": 3}, 0.95) is None


def test_predict_the_held_out_runs_from_one_fit(tmp_path: Path, capsys) -> None:
    runs = pl.read_csv(GADRE).filter(pl.col("dataset") == "c4")
    fit_path = tmp_path / "c4.csv"
    runs.filter(pl.col("held_out") == 0).select("N", "D", "loss").write_csv(fit_path)
    held = runs.filter(pl.col("held_out") == 1).sort("N", "D")
    ns, ds = (",".join(str(v) for v in held[c]) for c in ("N", "D"))
    args = ["predict", "--points", str(fit_path), "--fit-bootstrap", "40", "--format", "json"]
    assert main([*args, "--n", ns, "--d", ds, "--tie-exponents"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = next(t for t in doc["tables"] if t["name"] == "prediction")["records"]
    assert [(r["N"], r["D"]) for r in rows] == held.select("N", "D").rows()
    # One fit for all three: its curve at each planned run (refitted here the same way).
    n, d, m = _arrays(runs.filter(pl.col("held_out") == 0))
    fit = bootstrap_joint(Cells.of(n, d, m), n_boot=1, seed=0, form=JointForm(tie=True)).fit
    expect = fit.predict(held["N"].to_numpy(), held["D"].to_numpy())
    assert [r["predicted"] for r in rows] == pytest.approx(expect.tolist(), rel=1e-9)
    assert all(r["pi_low"] < r["predicted"] < r["pi_high"] for r in rows)
    # The fit predicts the study's held-out 1.4B and 6.9B C4 runs to within 6% (relative errors
    # measured when written: −1.1% and +0.3% at 1.4B, −5.2% at 6.9B).
    err = np.array([r["predicted"] for r in rows]) / held["loss"].to_numpy() - 1
    assert np.all(np.abs(err) < 0.06), err
    assert doc["settings"]["form"].endswith("α = β")
    # One D for every N is broadcast; a --d of another length is refused.
    assert main([*args, "--n", ns, "--d", ds.split(",")[0]]) == 0
    one_d = json.loads(capsys.readouterr().out)
    pred = next(t for t in one_d["tables"] if t["name"] == "prediction")["records"]
    assert [r["D"] for r in pred] == [float(held["D"][0])] * 3
    assert main([*args, "--n", ns, "--d", "1e9,2e9"]) == 2
    assert "2 values for 3 values of --n" in capsys.readouterr().err


def test_lines_at_fixed_tokens_per_parameter(tmp_path: Path) -> None:
    path = tmp_path / "c4.csv"
    _c4_runs().write_csv(path)
    data = table_values(path, TableColumns(), TableFilter(lines="ratio"))
    frame = data.frame.with_columns(pl.col("value").alias("y"))
    found = dict(lines(frame, "N", d_steps=True))
    # The study's multipliers 0.25–32 of Chinchilla's 20 tokens per parameter: D/N 5 … 640.
    assert list(found) == [f"D/N {r:.3g}" for r in (5, 10, 20, 40, 80, 160, 320, 640)]
    line = found["D/N 20"]
    assert np.allclose(line["D"] / line["N"], 20.0, rtol=1e-3) and line.height == 4
