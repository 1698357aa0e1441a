"""Study 4's learning-rate rule (studies/scaling_code/lr_choice.py): the half-decade ladder by
hand, and on a hand-written store of the grid's experiment the overrides it prints, split into
words as the Makefile's shell does (quotes kept) and read back through the real sweep file
(lr_grid.yaml) into the trials they would run."""

from __future__ import annotations

from pathlib import Path

from bench.synthetic_store import trial_config, write_metric_rows, write_trial_states
from orchestrator.sweep.search_space import grid_arms
from orchestrator.sweep.sweep_file import load_sweep
from records.layout import trial_row
from tests.analysis_fixtures import at
from tests.studies.study_tables import ROOT, study_tables

lr_choice = study_tables("scaling_code", "lr_choice")
SIZES = {"h32l1": 11_616, "tiny": 50_928, "h128l5": 923_008, "s": 2_361_792}


def write_grid(root: Path, experiment: str, ce: dict[tuple[str, float], float]) -> None:
    """One mle seed-0 trial per (model, lr) of `ce` with its final eval/test/ce."""
    rows, trials = [], []
    for k, ((model, lr), value) in enumerate(sorted(ce.items())):
        trial = f"{experiment}-t{k}"
        rows += [
            (trial, 0, 0, "model/params_non_embedding", SIZES[model], at(k)),
            (trial, 0, 1500, "eval/test/ce", value, at(k + 1)),
        ]
        config = trial_config(loss="mle", seed=0, lr=lr, model=model, dataset="text_files")
        trials.append(trial_row(trial, "TERMINATED", config, start=at(k), ts=at(k + 2)))
    write_metric_rows(root, experiment, rows)
    write_trial_states(root, experiment, trials)


def test_ladder_by_hand() -> None:
    assert [lr_choice.ladder_step(r, up=True) for r in (1e-3, 3e-3, 1e-2, 3e-2)] == [
        3e-3,
        1e-2,
        3e-2,
        1e-1,
    ]
    assert [lr_choice.ladder_step(r, up=False) for r in (1e-3, 3e-3, 3e-4)] == [3e-4, 1e-3, 1e-4]


def test_edges_get_the_next_rate_until_inside(tmp_path: Path, capsys) -> None:
    # h32l1 is best at the highest rate, h128l5 at the lowest, tiny inside; s (not a size of
    # the study) at an edge too, but it is never extended
    grid = {("h32l1", 1e-3): 5.0, ("h32l1", 3e-3): 4.8, ("h32l1", 1e-2): 4.6}
    grid |= {("tiny", 1e-3): 4.5, ("tiny", 3e-3): 4.2, ("tiny", 1e-2): 4.4}
    grid |= {("h128l5", 1e-3): 3.0, ("h128l5", 3e-3): 3.1, ("h128l5", 1e-2): 3.5}
    grid |= {("s", 1e-3): 3.05, ("s", 3e-3): 3.1, ("s", 1e-2): 3.8}
    write_grid(tmp_path, "scaling-code-lr", grid)
    assert lr_choice.main(["extend", str(tmp_path)]) == 0
    words = capsys.readouterr().out.split()
    assert words[0].startswith("experiment=scaling-code-lr-ext-")
    sweep = load_sweep(ROOT / "studies/scaling_code/lr_grid.yaml", words)
    assert sorted((a["preset"], a["lr"]) for a in grid_arms(sweep)) == [
        ("h128l5", 3e-4),
        ("h32l1", 3e-2),
    ]
    # the same store prints the same extension (an interrupted one resumes under its name)
    lr_choice.main(["extend", str(tmp_path)])
    assert capsys.readouterr().out.split() == words
    # after it: h32l1's 3e-2 is worse (inside now), h128l5's 3e-4 best again (one more step)
    write_grid(tmp_path, words[0].split("=")[1], {("h32l1", 3e-2): 4.7, ("h128l5", 3e-4): 2.9})
    assert lr_choice.main(["extend", str(tmp_path)]) == 0
    second = capsys.readouterr().out.split()
    assert second[1:] == ['grid.presets=["h128l5"]', 'grid.lrs={"h128l5":[0.0001]}']
    assert second[0] != words[0]
    # a third edge at h128l5 is one too many: exit 1, naming the size
    write_grid(tmp_path, second[0].split("=")[1], {("h128l5", 1e-4): 2.8})
    assert lr_choice.main(["extend", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "still at an edge after 2 extensions" in err and "h128l5 (lowest" in err
    # the chosen rates of the study's sizes (s is not one), for gate.yaml
    assert lr_choice.main(["chosen", str(tmp_path)]) == 0
    chosen = load_sweep(ROOT / "studies/scaling_code/gate.yaml", capsys.readouterr().out.split())
    assert [(a["preset"], a["lr"], a["seed"]) for a in grid_arms(chosen)] == [
        ("h128l5", 1e-4, 1),
        ("tiny", 3e-3, 1),
        ("h32l1", 1e-2, 1),
    ]


def test_every_rate_inside_prints_nothing(tmp_path: Path, capsys) -> None:
    grid = {(m, lr): 4.0 + (0.0 if lr == 3e-3 else 0.3) for m in SIZES for lr in (1e-3, 3e-3, 1e-2)}
    write_grid(tmp_path, "scaling-code-lr", grid)
    assert lr_choice.main(["extend", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
