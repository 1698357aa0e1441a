"""`numsweep study replay` on the committed stores of studies 5 and 3 with their study files:
study 5's design (looks at 3, 6, 9 pairs, O'Brien-Fleming-type) stops for equivalence at its
second look, the registered verdict (equivalent within ±0.02), with 6 of 9 seeds; study 3's
(looks at 3 and 6) finds the α 0.01 dose equivalent and leaves α 0.2 undecided, as its registered
analysis did. Expected numbers: tests/analysis/test_sequential_replay.py derives them (the hours
from the trials' own wall times); here the study file must reach the same ones. Fast: no Ray."""

from __future__ import annotations

import json

import numpy as np
import pytest

from orchestrator.cli import main
from tests.analysis.trend_fixtures import SLOPES, write_trend_store
from tests.orchestrator.study.test_study_file import _write, trend_study

STUDY5 = ["studies/del_pretrained/study.yaml", "--from", "studies/del_pretrained/results"]
STUDY3 = ["studies/del_plateau/study.yaml", "--from", "studies/del_plateau/results"]


def _json(capsys, args: list[str]) -> dict:
    assert main(["study", "replay", *args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_study5_replay_reproduces_its_verdict_at_the_second_look(capsys):
    doc = _json(capsys, STUDY5)
    assert (doc["decision"], doc["look"], doc["seeds"]) == ("equivalent", 2, 6)
    assert doc["looks_at"] == [3, 6, 9]
    assert doc["hours"] == pytest.approx(2.705, abs=1e-3)
    assert doc["fixed_hours"] == pytest.approx(4.021, abs=1e-3)
    (arm,) = doc["arms"]
    assert arm["arm"] == "del" and arm["equivalent"]
    assert -0.02 < arm["ci"][0] < arm["ci"][1] < 0.02


def test_study3_replay_under_holm(capsys):
    doc = _json(capsys, STUDY3)
    assert {a["arm"]: (a["decision"], a["seeds"]) for a in doc["arms"]} == {
        "del (alpha=0.01)": ("equivalent", 6),
        "del (alpha=0.2)": ("undecided", 6),
    }
    assert doc["decision"] == "undecided" and doc["hours"] is None


def test_replay_markdown_and_a_missing_store(capsys, tmp_path):
    assert main(["study", "replay", *STUDY5]) == 0
    out = capsys.readouterr().out
    assert "decision: equivalent at look 2" in out and "| del | 2 | 6 |" in out
    assert main(["study", "replay", STUDY5[0], "--from", str(tmp_path / "none")]) == 2
    assert "no such results store" in capsys.readouterr().err


def test_a_trend_study_replays_its_slopes_and_says_so(tmp_path, capsys):
    """Study 7's form on the store of tests/analysis/trend_fixtures.py (its slopes derived there
    by hand): the study file's trend primary reaches the replay; status names the primary."""
    doc = trend_study()
    doc["design"] = {"seeds": [3, 6], "spending": "pocock"}
    path = _write(tmp_path, doc)
    write_trend_store(tmp_path / "store", "s")
    got = _json(capsys, [str(path), "--from", str(tmp_path / "store")])
    assert (got["decision"], got["look"], got["seeds"]) == ("superior", 1, 3)
    assert got["arms"][0]["estimate"] == pytest.approx(np.mean(SLOPES[:3]))
    assert main(["study", "replay", str(path), "--from", str(tmp_path / "store")]) == 0
    out = capsys.readouterr().out
    assert "looks (Δ = treatment − reference, slope per decade of N)" in out
    assert "seed 6 has no pair at xs" in out
    assert main(["study", "status", str(path), "--results", str(tmp_path / "none")]) == 0
    status = capsys.readouterr().out
    assert (
        "treatment − reference as a slope per decade of N over 3 sizes (h16l1, tiny, xs)" in status
    )
