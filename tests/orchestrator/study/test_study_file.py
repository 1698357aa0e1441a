"""The study file's refusals: each bad file exits 2 with `error:` naming the file and the key,
before anything is launched or written (no results folder appears). Fast: no Ray."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from analysis.sequential import plan
from orchestrator.cli import main
from orchestrator.study.pilot import PilotArm, PilotSummary
from orchestrator.study.sizing import size_design
from orchestrator.study.study_file import load_study
from tests.analysis.trend_fixtures import SIZES
from tests.sweep_runs import ROOT

PILOT = PilotSummary("p", 2, (PilotArm("del", "mle", 2, 0.0, 0.5),), 0.2, 0.1)
"""A pilot whose paired differences' sd equals the SESOI (0.5)."""
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


_DROP = object()


def trend_study() -> dict:
    """STUDY with the trend primary (study 7's form) on the three sizes of
    tests/analysis/trend_fixtures.py, each at its own learning rate."""
    doc = copy.deepcopy(STUDY)
    doc["primary"]["trend"] = "log_n"
    doc["sesoi"] = 0.01
    doc["sweep"]["grid"].update(
        presets=[p for p, _, _ in SIZES], lrs={p: [lr] for p, _, lr in SIZES}
    )
    return doc


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
    ({"design.sd_bound": 0.3}, "design.sd_bound"),  # a lower limit would size smaller
    ({"design.seeds_per_look": 2}, "design.seeds_per_look"),  # beside design.seeds
    ({"design.seeds": _DROP, "design.seeds_per_look": 1}, "design.seeds_per_look"),
    ({"design.seeds": _DROP, "design.seeds_per_look": 2, "design.looks": 2}, "design.looks"),
    (
        {"design.seeds": _DROP, "design.seeds_per_look": 2, "design.spending": "none"},
        "design.seeds_per_look",
    ),
    ({"design.seeds": _DROP, "design.max_seeds": 5, "design.seeds_per_look": 2}, "max_seeds 5"),
    ({"design.seeds": _DROP, "design.max_seeds": 22, "design.seeds_per_look": 2}, "11 looks"),
    ({"pilot.seeds": [1]}, "pilot.seeds"),
    ({"pilot.seeds": [0, 1]}, "pilot.seeds"),  # also main-stage seeds 0-3
    ({"pilot.arms": ["del"]}, "pilot.arms"),  # without the reference
    ({"pilot.params": {"del": {"alpha": 0.3}}}, "pilot.params.del"),  # not a grid variant
    ({"pilot.params": {"dist2": {}}}, "pilot.params.dist2"),  # not a pilot arm
    ({"reference": "dist2"}, "reference"),
    ({"budget_hours": 0}, "budget_hours"),
    ({"sweep.grid.losses": ["mle"]}, "sweep.grid.losses"),
    ({"sweep.trial.train": {"stpes": 4}}, "sweep.trial.train.stpes"),
    ({"sweep.mode": "search"}, "sweep.mode"),
    ({"primary.trend": "log_n"}, "primary.trend: log_n needs at least 3 model sizes"),
    ({"primary.trend": "log_n", "sweep.grid.presets": ["tiny", "xs"]}, "got 2 (tiny, xs)"),
    ({"primary.trend": "log_d"}, "primary.trend"),
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


def test_the_content_is_what_the_file_says_so_a_new_default_leaves_it_as_registered(tmp_path):
    # A field the file leaves out (design.sd_bound, added after studies were registered with
    # this schema) is not content: a study registered before it existed still matches.
    study = load_study(_write(tmp_path, STUDY))
    content, resolved = study.content(), study.resolved()
    assert "sd_bound" not in content["study"]["design"] and "alpha" not in content["study"]
    assert resolved["study"]["design"]["sd_bound"] is None and resolved["study"]["alpha"] == 0.05
    assert content["study"]["design"] == {"seeds": [2, 4]}
    assert content["sweep"]["grid"] == {"losses": ["mle", "del"]}


REPLAYED = {"del_pretrained", "del_plateau"}
"""Studies run before `numsweep study` existed: their files replay a fixed set of looks."""


def test_the_shipped_study_files_validate():
    assert {p.parent.name for p in SHIPPED} >= REPLAYED | {"del_doses"}
    for path in SHIPPED:
        study = load_study(path)
        if path.parent.name in REPLAYED:
            assert study.sweep.experiment.endswith("-main") and study.spec.design.seeds
        else:  # run by `numsweep study run`: sized by its pilot
            assert study.spec.design.max_seeds == "pilot" and study.spec.pilot.seeds


def test_a_trend_takes_one_learning_rate_a_size(tmp_path, capsys):
    doc = trend_study()
    assert load_study(_write(tmp_path, doc)).spec.primary.trend == "log_n"
    doc["sweep"]["grid"]["lrs"]["tiny"] = [1e-2, 3e-3]
    assert main(["study", "status", str(_write(tmp_path, doc))]) == 2
    err = capsys.readouterr().err
    assert "primary.trend: one learning rate a size" in err and "grid.lrs gives tiny" in err


def test_seeds_per_look_sets_the_looks(tmp_path, capsys):
    """Looks every `seeds_per_look` seeds up to max_seeds; a maximum it does not divide is
    refused with the looks it would give and the maxima that work; from the pilot, the power
    analysis picks the number of looks (analysis.sequential.plan, checked in
    tests/analysis/test_sequential_simulation.py), and a replay, which has no pilot, refuses."""
    doc = _with({"design.seeds": _DROP, "design.max_seeds": 6, "design.seeds_per_look": 2})
    study = load_study(_write(tmp_path, doc))
    assert study.spec.design.look_seeds == (2, 4, 6)
    assert size_design(study, PILOT).seeds == (2, 4, 6)
    doc["design"]["max_seeds"] = 7
    path = _write(tmp_path, doc)
    assert main(["study", "status", str(path)]) == 2
    err = capsys.readouterr().err
    assert "design.seeds_per_look: 2 seeds a look do not reach max_seeds 7" in err
    assert "(looks at 2, 4, 6); give max_seeds 6 or 8" in err
    doc["design"] = {"seeds_per_look": 3}  # max_seeds: pilot
    path = _write(tmp_path, doc)
    design = size_design(load_study(path), PILOT)
    assert design.seeds == plan(0.5, 0.5, seeds_per_look=3).test.seeds == (3, 6, 9, 12)
    assert main(["study", "replay", str(path), "--from", str(tmp_path)]) == 2
    assert "design.max_seeds: `pilot` with design.seeds_per_look" in capsys.readouterr().err


def test_a_key_written_twice_or_a_non_finite_number_exits_2(tmp_path, capsys):
    """A study file is read as sweep files are (orchestrator.sweep.yaml_source): a key written
    twice names the key and both lines; `.inf` where a number goes names the key."""
    text = yaml.safe_dump(STUDY, sort_keys=False)
    twice = tmp_path / "twice.yaml"
    twice.write_text(text + "budget_hours: 2.0\n")
    assert main(["study", "status", str(twice)]) == 2
    err = capsys.readouterr().err
    assert "budget_hours" in err and "written twice" in err, err
    infinite = _write(tmp_path, {**STUDY, "budget_hours": float("inf")})
    assert main(["study", "status", str(infinite)]) == 2
    err = capsys.readouterr().err
    assert "budget_hours" in err and str(infinite) in err, err
