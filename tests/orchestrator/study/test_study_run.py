"""`numsweep study run` end to end on the `tiny` preset, as a user runs it (the real CLI, Ray,
Tune, DeepSpeed, Parquet): a study file from nothing to a verdict: its pilot alone first
(`--pilot-only`, which stops before the registration), then interrupted at a look and resumed;
blind status while it runs; a changed file refused after registration; an over-budget design
refused before any main-stage trial. One study run (pilot 2 seeds, looks at 2 and 4 paired
seeds, 4 steps a trial: 12 trials) serves every test of the file; only the three `run`s that
train start Ray (each its own local instance: the refusals never start it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from records.reader import load_trials, open_store, read_latest
from tests.sweep_runs import log_tail, numsweep, numsweep_background

EXPERIMENT = "tiny-study"
STUDY = {
    "question": "Is DEL's held-out CE equivalent to MLE's within ±0.01 nat on the tiny preset?",
    "sweep": {
        "experiment": EXPERIMENT,
        "mode": "grid",
        "seed": 3,
        "trial": {
            "model": {"preset": "tiny", "vocab_size": 512},
            "data": {
                "modules": ["arithmetic__add_or_sub"],
                "n_train": 64,
                "n_test": 16,
                "max_length": 64,
            },
            "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
            "eval": {"every": 4, "batch_size": 16, "generate_examples": 0},
        },
        "grid": {"losses": ["mle", "del"]},
        "resources": {"workers_per_trial": 1, "cpus_per_worker": 1},
    },
    "reference": "mle",
    "primary": {"metric": "eval/test/ce", "summary": "final"},
    # 4 steps of DEL move CE by about 0.001 nat: the first look's interval (its bound t 57 at 2
    # seeds) is wider than ±0.01, the second's (t 2.45 at 4 seeds) well inside
    "sesoi": 0.01,
    "hypotheses": "both",
    "pilot": {"seeds": [100, 101]},
    # No futility rule: the first look (2 seeds) then cannot stop, so the run has a look to be
    # interrupted after.
    "design": {"seeds": [2, 4], "futility": False},
    "budget_hours": 1.0,
}


def _write(folder: Path, doc: dict, name: str = "study.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(doc))
    return path


def _looks(results: Path) -> list[dict]:
    path = results / "study" / EXPERIMENT / "looks.json"
    return json.loads(path.read_text()) if path.is_file() else []


def _trials(results: Path, experiment: str) -> pl.DataFrame:
    return load_trials(open_store(results, [experiment]))


def _interrupted_after_look_1(study: Path, results: Path, log: Path) -> None:
    """Start the study and SIGKILL it (and its Ray instance) once look 1 is recorded."""
    first = numsweep_background("study", "run", study, "--results", results, log=log)
    deadline = time.time() + 900
    while time.time() < deadline and first.poll() is None and not _looks(results):
        time.sleep(0.5)
    assert first.poll() is None, "the study ended before look 2:\n" + log_tail(log)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()


def _interrupted_in_the_pilot(study: Path, results: Path, log: Path) -> tuple[int, str]:
    """Start the pilot and send its command SIGINT (a user's Ctrl-C to the command alone) once
    a pilot trial is running: (exit code, output)."""
    run = numsweep_background("study", "run", study, "--results", results, "--pilot-only", log=log)
    deadline = time.time() + 600
    pilot = results / "trials" / f"experiment={EXPERIMENT}-pilot"
    while time.time() < deadline and run.poll() is None and not any(pilot.glob("*.parquet")):
        time.sleep(0.5)
    assert run.poll() is None, "the pilot ended before it was interrupted:\n" + log_tail(log)
    os.kill(run.pid, signal.SIGINT)
    try:
        code = run.wait(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return code, log.read_text(errors="replace")


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    """The study interrupted after look 1 (its status then), resumed to its verdict."""
    tmp = tmp_path_factory.mktemp("study")
    study, results = _write(tmp, STUDY), tmp / "results"
    started = time.monotonic()
    interrupted = _interrupted_in_the_pilot(study, results, tmp / "pilot.log")
    pilot_only = numsweep("study", "run", study, "--results", results, "--pilot-only")
    registered_after_pilot = (results / "study" / EXPERIMENT / "registration.json").exists()
    _interrupted_after_look_1(study, results, tmp / "first.log")
    status = numsweep("study", "status", study, "--results", results)
    (tmp / "status.txt").write_text(status.stdout)  # kept with the run, for reading after it
    report = numsweep("study", "report", study, "--results", results)
    main_after_kill = _trials(results, EXPERIMENT)
    pilot_ids = sorted(_trials(results, f"{EXPERIMENT}-pilot")["trial_id"].to_list())
    resumed = numsweep("study", "run", study, "--results", results)
    print(f"study run: {time.monotonic() - started:.0f} s, interrupted and resumed")
    return {
        "tmp": tmp,
        "study": study,
        "results": results,
        "status": status,
        "report_while_running": report,
        "main_after_kill": main_after_kill,
        "pilot_ids": pilot_ids,
        "resumed": resumed,
        "pilot_only": pilot_only,
        "interrupted_pilot": interrupted,
        "registered_after_pilot": registered_after_pilot,
    }


def _final_ce(results: Path, experiment: str) -> dict[tuple[str, int], float]:
    store = open_store(results, [experiment])
    latest, _ = read_latest(store, ["eval/test/ce"])
    last = latest.sort("step").group_by("trial_id").agg(pl.col("value").last())
    trials = load_trials(store).filter(pl.col("status") == "TERMINATED")
    joined = last.join(trials.select("trial_id", "loss", "seed"), on="trial_id")
    return {(r["loss"], r["seed"]): r["value"] for r in joined.iter_rows(named=True)}


@pytest.mark.slow
def test_status_is_blind_while_the_study_runs(study_run):
    status = study_run["status"]
    assert status.returncode == 0, status.stderr
    text = status.stdout
    assert "look 1 at 2 paired seeds" in text and "no decision, went on" in text
    assert "next: look 2 of 2 at 4 paired seeds" in text and "trial-hours" in text
    # no arm's value: none of the stored CE values, at any precision a table would show
    for value in _final_ce(study_run["results"], EXPERIMENT).values():
        for shown in (f"{value:.3g}", f"{value:.4g}", f"{value:.3f}"):
            assert shown not in text, (shown, text)
    report = study_run["report_while_running"]
    assert report.returncode == 2 and "has not stopped" in report.stderr


@pytest.mark.slow
def test_an_interrupted_pilot_says_so_and_the_same_command_resumes_it(study_run):
    code, out = study_run["interrupted_pilot"]
    assert code == 1, out[-3000:]
    assert "the pilot stopped with" in out and "run the same command to resume it" in out
    assert "no arm to compare" not in out  # not summarised as if it had finished
    assert study_run["pilot_only"].returncode == 0  # resumed (the next test reads it)


@pytest.mark.slow
def test_pilot_only_runs_the_pilot_and_shows_the_design_without_registering(study_run):
    out = study_run["pilot_only"]
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "pilot tiny-study-pilot: del − mle: mean" in out.stdout
    assert "would register: looks at 2, 4 paired seeds" in out.stdout
    assert "not registered (--pilot-only)" in out.stdout
    assert not study_run["registered_after_pilot"]


@pytest.mark.slow
def test_interrupted_at_a_look_then_resumed_to_a_verdict(study_run):
    resumed, results = study_run["resumed"], study_run["results"]
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "registered at" in resumed.stdout  # the registration was kept, not redone
    assert "stopped at look 2 (4 paired seeds)" in resumed.stdout
    # the pilot did not run again; the main stage has each of its 8 trials once, finished
    assert sorted(_trials(results, f"{EXPERIMENT}-pilot")["trial_id"]) == study_run["pilot_ids"]
    # the main stage: each of its 8 trials finished once; a trial the kill cut short, where Tune
    # had not saved its state yet, is left as it was (not TERMINATED: no look counts it)
    main = _trials(results, EXPERIMENT)
    finished = main.filter(pl.col("status") == "TERMINATED")
    assert sorted(zip(finished["seed"], finished["loss"], strict=True)) == sorted(
        (seed, loss) for seed in range(4) for loss in ("mle", "del")
    )
    assert set(main.filter(pl.col("status") != "TERMINATED")["seed"]) <= {2, 3}
    before = study_run["main_after_kill"]
    assert before.filter((pl.col("seed") < 2) & (pl.col("status") == "TERMINATED")).height == 4
    looks = _looks(results)
    assert [(e["look"], e["seeds"], e["stopped"]) for e in looks] == [(1, 2, False), (2, 4, True)]


@pytest.mark.slow
def test_the_report_matches_an_independent_computation(study_run):
    study, results = study_run["study"], study_run["results"]
    out = numsweep("study", "report", study, "--results", results, "--format", "json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    registration = json.loads((results / "study" / EXPERIMENT / "registration.json").read_text())
    assert doc["registration"] == registration
    assert registration["content"]["study"]["sesoi"] == 0.01
    assert len(registration["content_hash"]) == 64 and registration["code"]["git_revision"]
    design = registration["design"]
    assert design["seeds"] == [2, 4] and design["hours_per_seed"] > 0
    # the repeated CI by hand: del − mle over the 4 seeds, d̄ ± t₂·s/√4, t₂ the registered bound
    ce = _final_ce(results, EXPERIMENT)
    d = np.array([ce[("del", s)] - ce[("mle", s)] for s in range(4)])
    half = design["efficacy_t"][1] * d.std(ddof=1) / 2
    (arm,) = doc["arms"]
    assert arm["estimate"] == pytest.approx(d.mean())
    assert [arm["ci_low"], arm["ci_high"]] == pytest.approx([d.mean() - half, d.mean() + half])
    # the decision by the rules (docs/sequential.md): a superiority test first, then TOST
    t, bound = d.mean() / (d.std(ddof=1) / 2), design["efficacy_t"][1]
    inside = d.mean() - half > -0.01 and d.mean() + half < 0.01
    expected = "superior" if -t >= bound else "inferior" if t >= bound else "equivalent"
    assert inside
    assert doc["decision"] == expected  # lower CE is better: del − mle < 0 is DEL better
    assert (doc["look"], doc["seeds"]) == (2, 4)
    assert doc["hours"] > 0 and doc["pilot_hours"] > 0
    md = numsweep("study", "report", study, "--results", results)
    assert md.returncode == 0 and f"decision: {doc['decision']} at look 2 of 2" in md.stdout


@pytest.mark.slow
def test_a_changed_file_is_refused_after_registration(study_run):
    changed = {**STUDY, "sesoi": 0.02}
    changed["sweep"] = {**STUDY["sweep"], "trial": {**STUDY["sweep"]["trial"]}}
    changed["sweep"]["trial"]["train"] = {**STUDY["sweep"]["trial"]["train"], "steps": 5}
    path = _write(study_run["tmp"], changed, "changed.yaml")
    before = _trials(study_run["results"], EXPERIMENT).height
    out = numsweep("study", "run", path, "--results", study_run["results"])
    assert out.returncode == 2
    assert "study.sesoi" in out.stderr and "sweep.trial.train.steps" in out.stderr, out.stderr
    assert _trials(study_run["results"], EXPERIMENT).height == before


@pytest.mark.slow
def test_an_over_budget_design_is_refused_before_any_main_trial(study_run, tmp_path):
    """The pilot's store alone (its Ray state left behind: nothing to resume), a budget below
    the design's cost: refused with the numbers, nothing registered, no main-stage trial."""
    source, results = study_run["results"], tmp_path / "results"

    def not_main(folder: str, names: list[str]) -> list[str]:
        main = f"experiment={EXPERIMENT}"
        return [n for n in names if n in (main, EXPERIMENT, "study", "ray")]

    shutil.copytree(source, results, ignore=not_main)
    path = _write(tmp_path, {**STUDY, "budget_hours": 1e-6})
    out = numsweep("study", "run", path, "--results", results)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert "budget_hours" in out.stderr and "over the budget of 1e-06 h" in out.stderr
    assert "up to 4 paired seeds" in out.stderr and "nothing was registered" in out.stderr
    assert not (results / "study").exists()
    assert not (results / "trials" / f"experiment={EXPERIMENT}").exists()
    assert "Ray" not in out.stdout  # no Ray started: the pilot was in the store
