"""The plateau check (analysis/plateau.py): the per-arm slope over the last evaluations against a
hand computation (numpy polyfit per seed, the t interval over seeds written out; statsmodels OLS
for the one-seed case), the verdict rule in each direction, the ablation's † flag, and the
warning `numsweep sweep` prints at the end of a grid."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from analysis.__main__ import main
from analysis.plateau import still_learning_warning
from orchestrator.cli import end_of_sweep
from orchestrator.sweep.sweep_file import load_sweep
from tests.analysis.curve_fixtures import ACC, CE, ENT, write_curve_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rising(tmp_path_factory):
    return write_curve_store(tmp_path_factory.mktemp("rising") / "results")


def plateau_records(capsys, root, *flags) -> list[dict]:
    assert main(["plateau", str(root), *flags, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc["tables"][0]["records"]


def test_slope_is_the_mean_of_seed_slopes_with_a_t_interval(rising, capsys) -> None:
    recs = {r["arm"]: r for r in plateau_records(capsys, rising.root, "--metric", ACC)}
    x = np.array(rising.steps[-3:], dtype=float) / 1000
    for loss in ("mle", "del"):
        slopes = [np.polyfit(x, rising.values[(loss, s, ACC)][-3:], 1)[0] for s in range(5)]
        mean, sd = np.mean(slopes), np.std(slopes, ddof=1)
        half = stats.t.ppf(0.975, 4) * sd / math.sqrt(5)
        r = recs[loss]
        assert r["slope_per_1000"] == pytest.approx(mean)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((mean - half, mean + half))
        assert (r["step_from"], r["step_to"], r["seeds"]) == (200, 400, 5)
        assert r["verdict"] == "still learning" and r["still_learning"] is True


def test_window_and_threshold(rising, capsys) -> None:
    recs = plateau_records(capsys, rising.root, "--metric", ACC, "--last", "2")
    x = np.array([0.3, 0.4])
    s0 = [np.polyfit(x, rising.values[("mle", s, ACC)][-2:], 1)[0] for s in range(5)]
    assert recs[0]["arm"] == "mle" and recs[0]["slope_per_1000"] == pytest.approx(np.mean(s0))
    # a threshold above the slope's interval: not flagged
    high = plateau_records(capsys, rising.root, "--metric", ACC, "--min-slope", "5")
    assert {r["verdict"] for r in high} == {"plateau"}


def test_directions(rising, capsys) -> None:
    # CE falls: improving for a loss metric
    assert {r["verdict"] for r in plateau_records(capsys, rising.root, "--metric", CE)} == {
        "still learning"
    }
    # digit entropy has no better direction: it is "still changing"
    assert {r["verdict"] for r in plateau_records(capsys, rising.root, "--metric", ENT)} == {
        "still changing"
    }


def test_plateau_and_decline(tmp_path: Path, capsys) -> None:
    def flat(loss, seed, rng):
        # slope over steps 200-400 = (last − first) / 0.2 = 0.025·(seed − 2): mean 0
        tail = [0.6, 0.6 + 0.01 * (-1) ** seed, 0.6 + 0.005 * (seed - 2)]
        if loss == "del":
            tail = [0.6, 0.55 + 0.001 * seed, 0.5]
        return {ACC: [0.1, 0.3, *tail]}

    s = write_curve_store(tmp_path / "r", curves=flat)
    recs = {r["arm"]: r for r in plateau_records(capsys, s.root)}
    assert recs["del"]["verdict"] == "declining"
    assert recs["mle"]["verdict"] == "plateau"
    assert recs["mle"]["slope_per_1000"] == pytest.approx(0.0, abs=1e-12)
    assert recs["mle"]["ci_low"] < 0 < recs["mle"]["ci_high"]
    assert still_learning_warning(str(s.root), s.experiment) == []


def test_one_seed_uses_its_own_ols_interval(tmp_path: Path, capsys) -> None:
    s = write_curve_store(tmp_path / "r", seeds=(0,))
    rec = plateau_records(capsys, s.root, "--metric", ACC, "--last", "4")[0]
    x = np.array(s.steps[-4:], dtype=float) / 1000
    fit = sm.OLS(np.array(s.values[("mle", 0, ACC)][-4:]), sm.add_constant(x)).fit()
    assert rec["slope_per_1000"] == pytest.approx(fit.params[1])
    assert (rec["ci_low"], rec["ci_high"]) == pytest.approx(tuple(fit.conf_int(0.05)[1]))
    # two evaluations of one seed: a slope but no interval
    two = plateau_records(capsys, s.root, "--metric", ACC, "--last", "2")[0]
    assert two["ci_low"] is None and two["verdict"] == "no interval"


def test_too_few_evaluations_and_bad_flags(rising, capsys) -> None:
    rec = plateau_records(capsys, rising.root, "--metric", ACC, "--last", "9")[0]
    assert rec["verdict"] == "no slope" and "no seed has 9 evaluations" in rec["no_slope_reason"]
    for flags, named in [(["--last", "1"], "--last"), (["--min-slope", "-0.1"], "--min-slope")]:
        assert main(["plateau", str(rising.root), *flags]) == 2
        assert named in capsys.readouterr().err


def test_ablation_flags_arms_still_learning(rising, capsys) -> None:
    assert main(["ablation", str(rising.root), "--metric", ACC, "--plateau"]) == 0
    out = capsys.readouterr().out
    assert "| mle † | 5 |" in out and "| del † | 5 |" in out
    assert "plateau check: slope per 1000 steps" in out
    assert "† still learning" in out
    # without --plateau: no flag
    assert main(["ablation", str(rising.root), "--metric", ACC]) == 0
    assert "†" not in capsys.readouterr().out


def test_sweep_prints_the_warning_at_the_end_of_a_grid(rising, capsys) -> None:
    sweep = load_sweep(
        ROOT / "studies" / "del_cpu" / "ablation.yaml", [f"experiment={rising.experiment}"]
    )
    assert sweep.mode == "grid"
    end_of_sweep(str(rising.root), sweep, 10, 0, True, summary=True)
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2
    assert warnings[0].startswith("warning: mle is still learning at step 400: eval/test/digit_acc")
    # --no-summary (a registered study's blinding) holds the warnings back with the table.
    end_of_sweep(str(rising.root), sweep, 10, 0, True, summary=False)
    assert "warning: " not in capsys.readouterr().out
