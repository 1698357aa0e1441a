"""The field's fits (analysis/scaling/huber.py, robust.py, bootstrap.unit_draws): known
parameters recovered from noisy synthetic points (the truth written here), the Huber objective
and its gradient against a direct numpy computation, the optimum against an independent
minimiser (Nelder–Mead), the stratified (size, seed) unit resampling on a tiny case against its
exact distribution, and the paired comparison of prediction errors against refits by
numpy.polyfit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from analysis.__main__ import main
from analysis.figures import plot_scaling
from analysis.scaling import scaling
from analysis.scaling.bootstrap import resampled_points, unit_draws
from analysis.scaling.huber import HUBER_DELTA, fit_huber, objective
from analysis.scaling.robust import Units, huber_record, prediction_records
from analysis.scaling.robust_fit import residuals_jacobian
from records.reader import open_store
from tests.analysis_fixtures import write_power_law_store

N = np.geomspace(1e4, 1e7, 8)
E, A, ALPHA = 0.8, 40.0, 0.35  # M = 0.8 + 40·N^−0.35: from 3.2 at 1e4 to 0.88 at 1e7


def truth(n: np.ndarray) -> np.ndarray:
    return E + A * n**-ALPHA


def test_recovers_known_parameters_from_noisy_points() -> None:
    rng = np.random.default_rng(1)
    m = truth(N) * np.exp(rng.normal(0.0, 0.003, N.size))  # 0.3% multiplicative noise
    fit = fit_huber(N, m)
    assert pytest.approx(E, abs=0.03) == fit.E
    assert fit.alpha == pytest.approx(ALPHA, abs=0.03)
    assert fit.predict(np.array([1e8]))[0] == pytest.approx(truth(np.array([1e8]))[0], rel=0.02)
    assert fit.agree >= 2 and fit.remark is None
    # Exact points: the fit is the truth.
    exact = fit_huber(N, truth(N))
    assert (exact.E, exact.A, exact.alpha) == pytest.approx((E, A, ALPHA), rel=1e-4)


def test_objective_and_gradient_match_a_direct_computation() -> None:
    rng = np.random.default_rng(2)
    m = truth(N) * np.exp(rng.normal(0.0, 0.01, N.size))
    x, y = np.log(N), np.log(m)
    for theta in ([np.log(0.7), np.log(30.0), 0.3], [np.log(0.9), np.log(60.0), 0.4]):
        direct = 0.0
        for n_i, m_i in zip(N, m, strict=True):
            r = np.log(np.exp(theta[0]) + np.exp(theta[1]) * n_i ** -theta[2]) - np.log(m_i)
            d = HUBER_DELTA
            direct += 0.5 * r * r if abs(r) <= d else d * (abs(r) - 0.5 * d)
        assert objective(np.array(theta), x, y, HUBER_DELTA) == pytest.approx(direct, rel=1e-12)
        # The residuals' Jacobian (robust_fit.py, what least squares is given) against finite
        # differences of the residuals, at θ = (e, a, α, b, β) with the D term present.
        full = np.array([[*theta, np.log(5.0), 0.25]])
        xd = np.log(np.geomspace(1e6, 1e9, N.size))[None, :]
        r, jac = residuals_jacobian(full, x[None, :], xd, y[None, :])
        numeric = optimize.approx_fprime(
            full[0],
            lambda t, xd=xd: residuals_jacobian(t[None, :], x[None, :], xd, y[None, :])[0][0],
            1e-7,
        )
        assert r.shape == (1, N.size) and jac[0] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_optimum_is_no_worse_than_nelder_mead() -> None:
    rng = np.random.default_rng(3)
    m = truth(N) * np.exp(rng.normal(0.0, 0.02, N.size))
    x, y = np.log(N), np.log(m)
    fit = fit_huber(N, m)
    ref = optimize.minimize(
        lambda t: objective(t, x, y, HUBER_DELTA),
        np.array([np.log(0.7), np.log(30.0), 0.3]),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000, "maxfev": 20000},
    )
    assert fit.loss <= ref.fun * (1 + 1e-6) + 1e-12


def test_unit_resampling_stays_within_each_size_and_matches_its_exact_distribution() -> None:
    counts = [2, 1, 3]  # units 0-1 are size 0, unit 2 size 1, units 3-5 size 2
    draws = unit_draws(counts, 20_000, seed=7)
    assert draws.shape == (20_000, 6)
    assert set(np.unique(draws[:, :2])) == {0, 1} and set(np.unique(draws[:, 2])) == {2}
    assert set(np.unique(draws[:, 3:])) == {3, 4, 5}
    np.testing.assert_array_equal(draws, unit_draws(counts, 20_000, seed=7))  # seeded
    assert unit_draws([1, 1, 1], 10, seed=0) is None  # one unit per size: nothing to resample
    values = np.array([1.0, 3.0, 5.0, 0.0, 0.0, 6.0])
    x = np.array([10.0, 10.0, 20.0, 30.0, 30.0, 30.0])
    sizes, means = resampled_points(x, values, counts, draws, means=True)
    np.testing.assert_array_equal(sizes, [10.0, 20.0, 30.0])
    # Size 0 draws two of {1, 3}: its mean is 1, 2 or 3 with probabilities 1/4, 1/2, 1/4.
    freq = {v: np.mean(means[:, 0] == v) for v in (1.0, 2.0, 3.0)}
    assert freq == pytest.approx({1.0: 0.25, 2.0: 0.5, 3.0: 0.25}, abs=0.015)
    assert np.all(means[:, 1] == 5.0)
    # Size 2 draws three of {0, 0, 6}: the mean is 6·(number of 6s)/3, binomial(3, 1/3).
    exact = {2.0 * k: float(math.comb(3, k) * (1 / 3) ** k * (2 / 3) ** (3 - k)) for k in range(4)}
    assert {v: np.mean(np.isclose(means[:, 2], v)) for v in exact} == pytest.approx(
        exact, abs=0.015
    )


def _seeded_units(noise: float, seeds: int = 3) -> tuple[Units, np.ndarray]:
    rng = np.random.default_rng(4)
    x = np.repeat(N[:6], seeds)
    ee = (0.2 + 20 * x**-0.3) * np.exp(rng.normal(0.0, noise, x.size))
    ce = ee + 0.6  # CE = EE + a constant: a bent line in log-log
    return Units(x=x, value=ce, counts=[seeds] * 6, second=ee), x


def test_huber_record_intervals_cover_the_truth() -> None:
    rng = np.random.default_rng(5)
    x = np.repeat(N, 3)
    m = truth(x) * np.exp(rng.normal(0.0, 0.01, x.size))
    rec = huber_record(Units(x, m, [3] * N.size), means=True, n_boot=40, level=0.95, seed=0)
    assert rec["bootstrap_resamples"] == 40
    assert rec["alpha_ci_low"] < ALPHA < rec["alpha_ci_high"]
    assert rec["E_ci_low"] < E < rec["E_ci_high"]


def test_paired_prediction_errors_match_polyfit_refits() -> None:
    units, _ = _seeded_units(0.002)
    recs = {
        r["form"]: r for r in prediction_records(units, means=True, n_boot=20, level=0.95, seed=0)
    }
    plain = recs["plain"]
    sizes, ce = units.points(True)
    _, ee = units.points(True, units.second)

    def loo(m: np.ndarray) -> float:
        errs = []
        for i in range(sizes.size):
            keep = np.arange(sizes.size) != i
            b, c = np.polyfit(np.log(sizes[keep]), np.log(m[keep]), 1)
            errs.append(np.exp(c + b * np.log(sizes[i])) / m[i] - 1)
        return float(np.sqrt(np.mean(np.square(errs))))

    def extrap(m: np.ndarray) -> float:
        b, c = np.polyfit(np.log(sizes[:-1]), np.log(m[:-1]), 1)
        return abs(float(np.exp(c + b * np.log(sizes[-1])) / m[-1] - 1))

    assert plain["loo_ce"] == pytest.approx(loo(ce), rel=1e-9)
    assert plain["loo_ee"] == pytest.approx(loo(ee), rel=1e-9)
    assert plain["extrap_ce"] == pytest.approx(extrap(ce), rel=1e-9)
    assert plain["loo_diff"] == pytest.approx(loo(ee) - loo(ce), rel=1e-9)
    # EE is a clean power law, CE = EE + 0.6 bends: EE predicts better, with an interval < 0.
    assert plain["loo_diff_ci_high"] < 0 and plain["loo_favours"] == "EE"
    assert plain["bootstrap_resamples"] == 20
    assert recs["huber"]["loo_ce"] is not None


def test_robust_tables_of_the_command(tmp_path, capsys) -> None:
    # ce = 3·N^−0.1 exactly at four sizes, one trial each: the Huber fit finds α = 0.1 and E → 0;
    # no interval (one trial per size), which the remark says.
    root = write_power_law_store(tmp_path, sizes=(1e6, 1e7, 1e8, 1e9))
    result = scaling(open_store(root), robust=True, n_boot_fit=10)
    tables = {t.name: t.data for t in result.tables}
    assert "scaling_huber" in tables and "scaling_prediction" in tables
    ce = tables["scaling_huber"].filter(tables["scaling_huber"]["metric"] == "eval/test/ce")
    row = ce.row(0, named=True)
    assert row["alpha"] == pytest.approx(0.1, abs=1e-3) and row["E"] < 1e-3
    assert row["plain_a"] == pytest.approx(-0.1)
    assert "one trial per size" in row["remark"]
    assert "scaling_huber" not in {t.name for t in scaling(open_store(root)).tables}
    assert main(["scaling", str(root), "--robust", "--fit-bootstrap", "5"]) == 0
    assert "Huber loss" in capsys.readouterr().out
    # The figure's series carry the same fit, and plot_scaling draws it (dotted) beside the two
    # least-squares forms; without --robust there is none to draw.
    entry = next(e for e in result.figure_data["scaling"] if e["metric"] == "eval/test/ce")
    assert entry["huber"] == (row["E"], row["A"], row["alpha"])
    plain = scaling(open_store(root)).figure_data["scaling"]
    assert all(e["huber"] is None for e in plain)
    png = plot_scaling([entry], ["eval/test/ce"], tmp_path / "ce.png", "ce")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_joint_fit_recovers_known_parameters() -> None:
    # L(N, D) = 1.7 + 400·N^−0.34 + 410·D^−0.28 (Chinchilla's shape, smaller numbers) on a
    # 4 × 4 grid of sizes and token counts, 0.2% multiplicative noise.
    from analysis.scaling.huber import fit_joint

    rng = np.random.default_rng(6)
    n, d = (g.ravel() for g in np.meshgrid(np.geomspace(1e5, 1e8, 4), np.geomspace(1e7, 1e10, 4)))
    m = (1.7 + 400 * n**-0.34 + 410 * d**-0.28) * np.exp(rng.normal(0, 0.002, n.size))
    fit = fit_joint(n, d, m)
    assert pytest.approx(1.7, abs=0.1) == fit.E
    assert fit.alpha == pytest.approx(0.34, abs=0.05) and fit.beta == pytest.approx(0.28, abs=0.05)
    assert fit.predict(np.array([1e9]), np.array([1e11]))[0] == pytest.approx(
        1.7 + 400 * 1e9**-0.34 + 410 * 1e11**-0.28, rel=0.02
    )


def test_joint_table_of_a_data_scaling_sweep(tmp_path) -> None:
    from analysis.scaling.huber import fit_joint
    from bench.synthetic_store import generate_store

    generate_store(
        tmp_path,
        losses=("mle",),
        seeds=(0, 1),
        sizes={"s": 1_000_000, "m": 4_000_000, "l": 16_000_000},
        steps=(100, 200, 400, 800),
        noise=0.002,
        splits=("test",),
        benchmarks=(),
        seed=6,
    )
    metric = "eval/test/error_entropy"
    result = scaling(open_store(tmp_path), metrics=[metric], robust=True, n_boot_fit=5)
    tables = {t.name: t.data for t in result.tables}
    joint = tables["scaling_joint"].row(0, named=True)
    assert joint["points"] == 12  # 3 sizes × 4 budgets
    # The same fit from the points table's D axis (per size and step: N, mean D, mean value).
    pts = tables["scaling_points"].filter(
        (tables["scaling_points"]["axis"] == "D") & (tables["scaling_points"]["metric"] == metric)
    )
    ref = fit_joint(pts["N"].to_numpy(), pts["x"].to_numpy(), pts["mean"].to_numpy())
    assert (joint["E"], joint["alpha"], joint["beta"]) == pytest.approx(
        (ref.E, ref.alpha, ref.beta), rel=1e-6
    )
    # The store's truth is multiplicative (EE ∝ N^−0.12·D^−0.08), not this additive form: the
    # joint form still describes it within 3%.
    fitted = ref.predict(pts["N"].to_numpy(), pts["x"].to_numpy())
    assert fitted == pytest.approx(pts["mean"].to_numpy(), rel=0.03)
    # Intervals from 5 resamples of the two seeds per cell; the allocation and the held-out
    # check (the largest budget: l at step 800, within a factor 2 of the largest C) follow it.
    assert joint["bootstrap_resamples"] + joint["bootstrap_failed"] == 5
    assert joint["E_ci_low"] is not None and joint["a_opt"] + joint["b_opt"] == pytest.approx(1)
    assert tables["scaling_optimal"].height == 3
    held = (
        tables["scaling_holdout"]
        .filter(tables["scaling_holdout"]["form"] == "joint")
        .row(0, named=True)
    )
    assert held["held_out_points"] == 1 and held["fit_points"] == 11
