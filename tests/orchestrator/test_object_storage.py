"""Results on object storage, end to end: a local S3-compatible server (moto's standalone
server, its own process on 127.0.0.1, started here) holds `--results s3://bucket/prefix`: the
sweep writes its Parquet parts, manifest and Ray's checkpoints there, is killed mid-run and
resumed from there, and `numsweep status` and `python -m analysis` read the same URI.
Credentials come from the standard AWS_* variables, the server's address from AWS_ENDPOINT_URL.

moto's server runs from its own virtualenv (`make s3-server`: moto pins botocore, which pins
python-dateutil below 3) and is found as `moto_server` there or on PATH.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from analysis.store import load_trials, open_store, read_latest
from tests.analysis_fixtures import write_golden_store
from tests.orchestrator.test_tracking import free_port, stop, wait_http
from tests.sweep_runs import ROOT, log_tail, numsweep, numsweep_background, write_sweep

EXPERIMENT = "s3sweep"
STEPS = 60
SWEEP = {
    "experiment": EXPERIMENT,
    "mode": "grid",
    "trial": {
        "model": {"preset": "tiny"},
        "data": {
            "modules": ["arithmetic__add_or_sub"],
            "n_train": 64,
            "n_test": 16,
            "max_length": 48,
        },
        "train": {"steps": STEPS, "micro_batch_size": 8, "warmup_steps": 2, "checkpoint_every": 5},
        "eval": {"every": 5, "batch_size": 16, "generate_examples": 0},
    },
    "grid": {"losses": ["mle", "del"], "seeds": [0]},
    "resources": {"workers_per_trial": 1, "max_concurrent_trials": 2},
}


def moto_server() -> str:
    for candidate in (ROOT / ".venv-s3" / "bin" / "moto_server", shutil.which("moto_server")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("moto_server not found: `make s3-server` installs it into .venv-s3")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """(endpoint, env) of a fresh S3-compatible server with a bucket `numsweep`."""
    tmp = tmp_path_factory.mktemp("s3")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp / "moto.log"
    proc = subprocess.Popen(
        [moto_server(), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_http(f"{endpoint}/moto-api/", proc)
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # for this process's readers and the commands it starts
    pafs.S3FileSystem(endpoint_override=endpoint, allow_bucket_creation=True).create_dir("numsweep")
    yield endpoint
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    stop(proc)


def s3_keys(prefix: str) -> list[str]:
    fs, base = pafs.FileSystem.from_uri(prefix)
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except FileNotFoundError:
        return []
    return [i.path for i in infos if i.type == pafs.FileType.File]


def max_stored_step(root: str) -> int:
    try:
        store = open_store(root, [EXPERIMENT])
    except ValueError:  # nothing written yet
        return -1
    latest, _ = read_latest(store, ["eval/test/ce"])
    return -1 if latest.height == 0 else int(latest["step"].max())


def test_the_reader_reads_a_bucket_as_it_reads_a_folder(s3, tmp_path) -> None:
    """No training: the golden store copied into the bucket reads back the same, through the
    reader and through `python -m analysis`."""
    local = write_golden_store(tmp_path / "results")
    root = "s3://numsweep/golden"
    pafs.copy_files(str(local), root)
    remote, here = open_store(root), open_store(local)
    assert remote.experiments == here.experiments == ("golden",)
    assert all(
        f.startswith(f"{root}/metrics/experiment=golden/part-")
        for f in remote.metric_files["golden"]
    )
    assert len(remote.metric_files["golden"]) == len(here.metric_files["golden"]) == 2
    assert load_trials(remote).equals(load_trials(here))
    keys = ["trial_id", "step", "metric"]
    (a, ca), (b, cb) = (
        read_latest(remote, ["eval/test/ce", "eval/test/digit_acc"]),
        read_latest(here, ["eval/test/ce", "eval/test/digit_acc"]),
    )
    assert a.sort(keys).equals(b.sort(keys)) and ca == cb and ca.raw > ca.kept  # repeats dropped

    def ablation(where: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "analysis", "ablation", where, "--metric", "eval/test/ce"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.replace(where, "<root>")

    assert ablation(root) == ablation(str(local))
    missing = subprocess.run(
        [sys.executable, "-m", "analysis", "ablation", "s3://numsweep/nothing-here"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode == 2 and "s3://numsweep/nothing-here" in missing.stderr


@pytest.mark.slow
def test_sweep_on_s3_resumes_and_is_read_where_it_lies(s3, tmp_path, monkeypatch) -> None:
    root = "s3://numsweep/studies/one"
    # Tune saves its experiment state (what a resume restores from) at most this often; on a
    # remote store its default spacing let both trials finish before the state was there.
    monkeypatch.setenv("TUNE_GLOBAL_CHECKPOINT_S", "1")
    config = write_sweep(tmp_path, SWEEP)

    log = tmp_path / "first.log"
    first = numsweep_background("sweep", config, "--results", root, log=log)
    deadline = time.time() + 600
    # Killed once a trial has stored step 10 and Tune has saved its experiment state there
    # (what a resume restores from).
    while time.time() < deadline and first.poll() is None:
        if max_stored_step(root) >= 10 and any("experiment_state" in k for k in s3_keys(root)):
            break
        time.sleep(1)
    assert first.poll() is None, "the sweep ended before it could be killed:\n" + log_tail(log)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and the Ray instance it started
    first.wait()
    keys = s3_keys(root)
    assert any("/checkpoint_" in k for k in keys), keys  # Ray Train's checkpoints are there
    assert 10 <= max_stored_step(root) < STEPS

    second = numsweep("sweep", config, "--results", root)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "resuming" in second.stdout

    keys = s3_keys(root)
    assert f"numsweep/studies/one/experiments/{EXPERIMENT}/manifest.json" in keys
    assert any(
        k.startswith(f"numsweep/studies/one/metrics/experiment={EXPERIMENT}/part-") for k in keys
    )
    store = open_store(root)
    trials = load_trials(store)
    assert trials.height == 2 and set(trials["status"]) == {"TERMINATED"}
    assert trials["starts"].max() == 2  # killed while running, started again on resume
    latest, counts = read_latest(store, ["eval/test/ce"])
    for (trial_id,), rows in latest.group_by("trial_id"):
        assert sorted(rows["step"]) == list(range(0, STEPS + 1, 5)), trial_id  # each step once
    assert counts.kept == latest.height

    status = numsweep("status", EXPERIMENT, "--results", root)
    assert status.returncode == 0, status.stderr[-3000:]
    assert "2 trial(s): 2 TERMINATED" in status.stdout
    assert (
        f"metrics parts: {len(store.metric_files[EXPERIMENT])} in {root}/metrics" in status.stdout
    )

    analysis = subprocess.run(
        [sys.executable, "-m", "analysis", "ablation", root, "--metric", "eval/test/ce"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert analysis.returncode == 0, analysis.stderr[-3000:]
    assert EXPERIMENT in analysis.stdout and "mle" in analysis.stdout and "del" in analysis.stdout

    # The same reader on a local copy of the bucket's prefix reads the same rows.
    local = tmp_path / "copy"
    pafs.copy_files(root, str(local))
    on_disk = read_latest(open_store(local), ["eval/test/ce"])[0]
    keys = ["trial_id", "step", "metric"]
    assert on_disk.sort(keys).equals(latest.sort(keys))
