"""Live tracking and the progress line, on one small real sweep (`tracking:` with all three):

- a local MLflow tracking server (its own process, SQLite backend, 127.0.0.1, started here)
  receives one run per trial, named with the trial id, with its parameters and every metric the
  trial wrote to Parquet, read back with `MlflowClient`;
- TensorBoard's event files are read back with TensorBoard's own `EventAccumulator`;
- W&B in offline mode writes each trial's run files (no network);
- the Optuna study carries the objective's name and per-trial user attributes, and
  optuna-dashboard shows them in headless Chromium;
- the sweep's output, not a terminal, is plain progress lines (no Tune tables).

A tracker whose package is missing is an exit-2 error naming the extra, before anything runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from orchestrator.cli import main
from tests.servers import free_port, start_server, stop
from tests.sweep_runs import numsweep, write_sweep

EXPERIMENT = "tracked"
OBJECTIVE = "eval/test/digit_acc"
SWEEP = {
    "experiment": EXPERIMENT,
    "mode": "search",
    "seed": 1,
    "trial": {
        "model": {"preset": "tiny", "vocab_size": 512},
        "data": {
            "modules": ["arithmetic__add_or_sub"],
            "n_train": 64,
            "n_test": 16,
            "max_length": 48,
        },
        "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 0},
    },
    "search": {
        "num_trials": 2,
        "losses": ["mle", "del"],
        "space": {"alpha": {"low": 0.01, "high": 0.5, "log": True}},
        "sampler": "random",
        "enqueue": [{"loss": "mle"}, {"loss": "del", "alpha": 0.05}],
        "objectives": [{"metric": OBJECTIVE, "mode": "max"}],
    },
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 1},
}
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    command = [
        str(BIN / "mlflow"),
        "server",
        "--backend-store-uri",
        f"sqlite:///{tmp}/mlflow.db",
        "--default-artifact-root",
        str(tmp / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    # No job runner: MLflow's server otherwise starts it with eight task-queue consumers, nine
    # processes that the tracking tests never use.
    env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = start_server(command, f"{uri}/health", tmp / "server.log", env)
    yield uri
    stop(proc)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory, mlflow_server):
    tmp = tmp_path_factory.mktemp("tracked")
    sweep = {
        **SWEEP,
        "tracking": {
            "tensorboard": True,
            "mlflow": {"uri": mlflow_server, "experiment": "numsweep-tracking"},
            "wandb": {"project": "numsweep-test", "mode": "offline"},
        },
    }
    results = tmp / "results"
    proc = numsweep("sweep", write_sweep(tmp, sweep), "--results", results)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    metrics = pl.read_parquet(results / "metrics" / f"experiment={EXPERIMENT}" / "*.parquet")
    trials = pl.read_parquet(results / "trials" / f"experiment={EXPERIMENT}" / "*.parquet")
    return proc, results, metrics, trials.sort("ts").group_by("trial_id").last()


def trial_dirs(results: Path, trial_ids: list[str]) -> dict[str, Path]:
    """trial id -> its Tune trial folder (`<trial id>_<index>_<params>_<date>`)."""
    ray = results / "experiments" / EXPERIMENT / "ray" / EXPERIMENT
    folders = [d for d in ray.iterdir() if d.is_dir()]
    return {t: d for t in trial_ids for d in folders if d.name.startswith(f"{t}_")}


@pytest.mark.slow
def test_mlflow_server_holds_every_trial_and_metric(tracked, mlflow_server) -> None:
    from mlflow.tracking import MlflowClient

    _, _, metrics, trials = tracked
    client = MlflowClient(tracking_uri=mlflow_server)
    experiment = client.get_experiment_by_name("numsweep-tracking")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    by_name = {r.info.run_name: r for r in runs}
    assert set(by_name) == set(trials["trial_id"])  # the run names join the Parquet rows
    losses = dict(trials.select("trial_id", "loss").iter_rows())
    for trial_id, run in by_name.items():
        assert run.info.status == "FINISHED"
        assert run.data.params["loss"] == losses[trial_id]
        assert run.data.tags["numsweep.experiment"] == EXPERIMENT
        mine = metrics.filter(pl.col("trial_id") == trial_id)
        assert set(mine["metric"]) <= set(run.data.metrics), trial_id  # every reported metric
        history = client.get_metric_history(run.info.run_id, "eval/test/ce")
        stored = mine.filter(pl.col("metric") == "eval/test/ce").sort("step")
        assert [h.value for h in sorted(history, key=lambda h: h.step)] == pytest.approx(
            stored["value"].to_list(), rel=1e-6
        )


@pytest.mark.slow
def test_tensorboard_event_files_read_back(tracked) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _, results, metrics, trials = tracked
    dirs = trial_dirs(results, trials["trial_id"].to_list())
    assert set(dirs) == set(trials["trial_id"])
    for trial_id, folder in dirs.items():
        assert list(folder.glob("events.out.tfevents.*")), folder
        events = EventAccumulator(str(folder))
        events.Reload()
        scalars = events.Tags()["scalars"]
        ce = [e.value for e in events.Scalars("ray/tune/eval/test/ce")]
        stored = metrics.filter(
            (pl.col("trial_id") == trial_id) & (pl.col("metric") == "eval/test/ce")
        )
        assert ce == pytest.approx(stored.sort("step")["value"].to_list(), rel=1e-5)
        assert "ray/tune/train/tokens_seen" in scalars


@pytest.mark.slow
def test_wandb_offline_writes_each_trials_run(tracked) -> None:
    _, results, _, trials = tracked
    dirs = trial_dirs(results, trials["trial_id"].to_list())
    assert set(dirs) == set(trials["trial_id"])
    for trial_id, folder in dirs.items():
        runs = list((folder / "wandb").glob(f"offline-run-*-{trial_id}"))
        assert len(runs) == 1, list((folder / "wandb").iterdir())
        data = (runs[0] / f"run-{trial_id}.wandb").read_bytes()  # W&B's record of the run
        # its history holds the trial's metrics (their names as plain strings)
        assert b"eval/test/ce" in data and b"train/tokens_seen" in data


@pytest.mark.slow
def test_progress_lines_when_not_a_terminal(tracked) -> None:
    proc = tracked[0]
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{EXPERIMENT}: ")]
    assert lines, proc.stdout[-3000:]
    pattern = re.compile(
        rf"{EXPERIMENT}: (\d)/2 done, (\d) running, (\d) failed \| best max {OBJECTIVE} "
        r"(\S+) \| \d+(m\d\ds)?s? elapsed"
    )
    parsed = [pattern.match(line) for line in lines]
    assert all(parsed), lines
    done = [int(m.group(1)) for m in parsed]
    assert done == sorted(done) and done[-1] == 2
    assert parsed[-1].group(3) == "0"
    assert "Trial status:" not in proc.stdout  # Tune's tables only with --verbose


@pytest.mark.slow
def test_optuna_study_is_labelled_and_shown_by_the_dashboard(tracked, tmp_path) -> None:
    import optuna

    from tests.chromium import CHROMIUM_FLAGS, ensure_chromium

    _, results, _, trials = tracked
    storage = f"sqlite:///{results}/experiments/{EXPERIMENT}/optuna.db"
    study = optuna.load_study(study_name=EXPERIMENT, storage=storage)
    assert study.metric_names == [OBJECTIVE]
    assert study.user_attrs["experiment"] == EXPERIMENT
    attrs = [t.user_attrs for t in study.trials]
    assert {a["trial_id"] for a in attrs} == set(trials["trial_id"])
    assert {a["loss"] for a in attrs} == {"mle", "del"}

    chromium = ensure_chromium()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(
        [str(BIN / "optuna-dashboard"), storage, "--host", "127.0.0.1", "--port", str(port)],
        f"{url}/api/studies",
        tmp_path / "dashboard.log",
    )
    try:
        with urllib.request.urlopen(f"{url}/api/studies", timeout=10) as answer:
            studies = json.load(answer)["study_summaries"]
        (summary,) = [s for s in studies if s["study_name"] == EXPERIMENT]
        page = f"{url}/dashboard/studies/{summary['study_id']}"
        dom = subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={tmp_path / 'profile'}",
                "--virtual-time-budget=20000",
                "--dump-dom",
                page,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        stop(server)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert OBJECTIVE in dom.stdout, dom.stdout[-3000:]
    assert "Objective 0" not in dom.stdout


def test_a_missing_tracker_is_exit_2_naming_the_extra(tmp_path, monkeypatch, capsys) -> None:
    # A package set to None in sys.modules cannot be imported: what an absent one does.
    monkeypatch.setitem(sys.modules, "wandb", None)
    sweep = {**SWEEP, "tracking": {"wandb": {"project": "p"}}}
    results = tmp_path / "results"
    code = main(["sweep", str(write_sweep(tmp_path, sweep)), "--results", str(results)])
    err = capsys.readouterr().err
    assert code == 2
    assert "tracking.wandb needs wandb" in err and "numsweep[tracking]" in err
    assert not results.exists()  # nothing launched, nothing written


def test_tracking_keys_are_checked() -> None:
    from orchestrator.sweep.sweep_file import SweepConfig

    assert SweepConfig().tracking.mlflow is None
    with pytest.raises(Exception, match="tensorbord"):
        SweepConfig.model_validate({"tracking": {"tensorbord": True}})
    with pytest.raises(Exception, match="mode"):
        SweepConfig.model_validate({"tracking": {"wandb": {"project": "p", "mode": "cloud"}}})


# In a fresh process: Ray Tune's usage tagging as `Tuner.fit` runs it, inside numsweep's
# `unused_clients_kept_out` (as `run_sweep` runs every fit) or alone; which tracking clients it
# imported; and whether, after the block, Ray's integrations load with their clients again (for
# a later sweep in the same process that tracks with them).
CLIENTS_SCRIPT = """
import json, sys
from ray.air._internal.usage import tag_callbacks
from ray.tune import Callback
from orchestrator.sweep.sweep_file import TrackingConfig
from orchestrator.run.tracking import unused_clients_kept_out

def tag():
    tag_callbacks([Callback()])
    return [client for client in ("mlflow", "wandb") if client in sys.modules]

tracking = TrackingConfig.model_validate(json.loads(sys.argv[1]))
if sys.argv[2] == "numsweep":
    with unused_clients_kept_out(tracking) as kept_out:
        imported = tag()
else:
    kept_out, imported = [], tag()
from ray.air.integrations import mlflow as ray_mlflow, wandb as ray_wandb
after = ray_mlflow.mlflow is not None and ray_wandb.wandb is not None
print(json.dumps({"kept_out": kept_out, "imported": imported, "clients_after": after}))
"""


@pytest.mark.parametrize(
    ("tracking", "how", "kept_out", "imported"),
    [
        # The premise: Ray's tagging alone imports both clients (else the rest means nothing).
        ({}, "ray", [], ["mlflow", "wandb"]),
        ({}, "numsweep", ["mlflow", "wandb"], []),
        ({"mlflow": {"uri": "http://127.0.0.1:5000"}}, "numsweep", ["wandb"], ["mlflow"]),
    ],
    ids=["ray-alone", "no-tracking", "mlflow-only"],
)
def test_ray_imports_only_the_tracking_clients_the_sweep_uses(tracking, how, kept_out, imported):
    run = subprocess.run(
        [sys.executable, "-c", CLIENTS_SCRIPT, json.dumps(tracking), how],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out == {"kept_out": kept_out, "imported": imported, "clients_after": True}
