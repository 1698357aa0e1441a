"""The study file's refusals: each bad file exits 2 with `error:` naming the file and the key,
before anything is launched or written (no results folder appears). Fast: no Ray."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main
from orchestrator.study.study_file import load_study
from tests.sweep_runs import ROOT

SHIPPED = sorted((ROOT / "studies").glob("*/study.yaml"))

STUDY = {
    "question": "Is DEL equivalent to MLE?",
    "sweep": {
        "experiment": "s",
        "mode": "grid",
        "trial": {"model": {"preset": "tiny"}},
        "grid": {"losses": ["mle", "del"]},
    },
    "reference": "mle",
    "primary": {"metric": "eval/test/ce", "summary": "final"},
    "sesoi": 0.5,
    "pilot": {"seeds": [100, 101]},
    "design": {"seeds": [2, 4]},
    "budget_hours": 1,
}


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _with(change: dict) -> dict:
    doc = copy.deepcopy(STUDY)
    for dotted, value in change.items():
        *parents, leaf = dotted.split(".")
        node = doc
        for key in parents:
            node = node[key]
        if value is _DROP:
            del node[leaf]
        else:
            node[leaf] = value
    return doc


_DROP = object()

REFUSALS = [
    ({"colour": "red"}, "colour"),  # an unknown key
    ({"sesoi": -1}, "sesoi"),
    ({"sesoi": _DROP}, "sesoi"),
    ({"alpha": 0.7}, "alpha"),
    ({"hypotheses": "superior"}, "hypotheses"),
    ({"primary.metric": "eval/test/nope"}, "primary.metric"),
    ({"primary.summary": "last:0"}, "primary.summary"),
    ({"design.spending": "haybittle"}, "design.spending"),
    ({"design.seeds": [4, 2]}, "design.seeds"),
    ({"design.futility": "maybe"}, "design.futility"),
    ({"pilot.seeds": [1]}, "pilot.seeds"),
    ({"pilot.seeds": [0, 1]}, "pilot.seeds"),  # also main-stage seeds 0-3
    ({"pilot.arms": ["del"]}, "pilot.arms"),  # without the reference
    ({"reference": "dist2"}, "reference"),
    ({"budget_hours": 0}, "budget_hours"),
    ({"sweep.grid.losses": ["mle"]}, "sweep.grid.losses"),
    ({"sweep.trial.train": {"stpes": 4}}, "sweep.trial.train.stpes"),
    ({"sweep.mode": "search"}, "sweep.mode"),
]


@pytest.mark.parametrize(("change", "key"), REFUSALS, ids=[k for _, k in REFUSALS])
@pytest.mark.parametrize("command", ["run", "status", "report"])
def test_a_bad_study_file_exits_2_naming_the_key(tmp_path, capsys, change, key, command):
    path = _write(tmp_path, _with(change))
    assert main(["study", command, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(path) in err and key in err, err
    assert not (tmp_path / "results").exists()


def test_a_sweep_file_by_path_is_read_beside_the_study_file(tmp_path, capsys):
    (tmp_path / "main.yaml").write_text(yaml.safe_dump(STUDY["sweep"]))
    study = load_study(_write(tmp_path, {**STUDY, "sweep": "main.yaml"}))
    assert study.experiment == "s" and study.pilot_experiment == "s-pilot"
    (tmp_path / "main.yaml").write_text(yaml.safe_dump({**STUDY["sweep"], "modes": "grid"}))
    assert main(["study", "status", str(tmp_path / "study.yaml")]) == 2
    err = capsys.readouterr().err
    assert "main.yaml" in err and "modes" in err


def test_a_missing_or_malformed_file_exits_2(tmp_path, capsys):
    assert main(["study", "status", str(tmp_path / "none.yaml")]) == 2
    assert "no such study file" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("question: [unclosed\n")
    assert main(["study", "status", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_the_content_hash_follows_what_the_file_says_not_its_layout(tmp_path):
    path = _write(tmp_path, STUDY)
    first = load_study(path).content_hash()
    path.write_text("# a comment\n" + yaml.safe_dump(STUDY, default_flow_style=True))
    assert load_study(path).content_hash() == first
    path.write_text(yaml.safe_dump({**STUDY, "sesoi": 0.4}))
    assert load_study(path).content_hash() != first


def test_the_shipped_study_files_validate():
    assert {p.parent.name for p in SHIPPED} >= {"del_pretrained", "del_plateau"}
    for path in SHIPPED:
        study = load_study(path)
        assert study.sweep.experiment.endswith("-main") and study.spec.design.seeds is not None
