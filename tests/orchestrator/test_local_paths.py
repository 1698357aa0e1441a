"""orchestrator.sweep.local_paths: a sweep file's relative file paths made absolute against the
directory numsweep runs in (a Ray Train worker runs elsewhere); what is not a local path stays."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from orchestrator.sweep.local_paths import absolute, absolute_trial_paths
from orchestrator.sweep.sweep_file import load_sweep
from trainables.config import TrialConfig


def test_relative_paths_become_absolute_and_absolute_ones_stay(tmp_path: Path) -> None:
    assert absolute("data/train.json", tmp_path) == str(tmp_path / "data" / "train.json")
    assert absolute("../shared/x.json", tmp_path / "a") == str(tmp_path / "shared" / "x.json")
    assert absolute("/srv/x.json", tmp_path) == "/srv/x.json"
    assert absolute("~/x.json", tmp_path) == str(Path.home() / "x.json")


def test_every_file_path_of_a_trial_is_made_absolute(tmp_path: Path) -> None:
    trial = TrialConfig.model_validate(
        {
            "data": {
                "source": "instructions",
                "path": "data/train.jsonl",
                "benchmarks": {"gsm8k": "../shared/gsm8k/test.jsonl", "svamp": "/abs/SVAMP.json"},
            }
        }
    )
    out = absolute_trial_paths(trial, tmp_path / "run")
    assert out.data.path == str(tmp_path / "run" / "data" / "train.jsonl")
    assert out.data.benchmarks == {
        "gsm8k": str(tmp_path / "shared" / "gsm8k" / "test.jsonl"),
        "svamp": "/abs/SVAMP.json",
    }
    assert out.model == trial.model and out.train == trial.train  # nothing else moves
    corpus = TrialConfig.model_validate(
        {"data": {"source": "text_files", "paths": ["src/**/*.py", "{stdlib}/json/*.py"]}}
    )
    globs = absolute_trial_paths(corpus, tmp_path).data.paths
    assert globs == [str(tmp_path / "src" / "**" / "*.py"), "{stdlib}/json/*.py"]


def test_a_model_path_moves_only_when_it_is_a_local_folder(tmp_path: Path) -> None:
    (tmp_path / "models" / "tiny-llama").mkdir(parents=True)
    (tmp_path / "smollm2").mkdir()  # a folder of that name does not shadow the offline model

    def model_path(path: str) -> str | None:
        trial = TrialConfig.model_validate({"model": {"preset": None, "path": path}})
        return absolute_trial_paths(trial, tmp_path).model.path

    assert model_path("models/tiny-llama") == str(tmp_path / "models" / "tiny-llama")
    assert model_path("HuggingFaceTB/SmolLM2-135M-Instruct") == (
        "HuggingFaceTB/SmolLM2-135M-Instruct"  # a hub id: no such folder here
    )
    assert model_path("smollm2") == "smollm2"


def test_load_sweep_resolves_against_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    sweep = {
        "mode": "grid",
        "trial": {"data": {"benchmarks": {"svamp": "bench/SVAMP.json"}}},
        "grid": {"losses": ["mle"], "seeds": [0]},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    monkeypatch.chdir(tmp_path)
    loaded = load_sweep(path)
    assert loaded.trial.data.benchmarks == {"svamp": str(tmp_path / "bench" / "SVAMP.json")}
    # The same file loaded from elsewhere names other files: a resume from there is refused as
    # a changed config (orchestrator.cli._check_resume compares the two).
    elsewhere = load_sweep(path, base=tmp_path / "other")
    assert elsewhere != loaded
    assert os.path.isabs(elsewhere.trial.data.benchmarks["svamp"])
