"""Results on object storage, read: a store in a bucket of a local S3-compatible server
(`tests.orchestrator.s3_server`) reads as the same store in a folder does, through the reader and
through `python -m analysis`. A sweep that writes to a bucket, is killed and resumes from it is
`tests/orchestrator/test_resume.py`."""

from __future__ import annotations

import pyarrow.fs as pafs

from records.reader import load_trials, open_store, read_latest
from tests.analysis_fixtures import write_golden_store
from tests.sweep_runs import analysis


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
        done = analysis("ablation", where, "--metric", "eval/test/ce")
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.replace(where, "<root>")

    assert ablation(root) == ablation(str(local))
    missing = analysis("ablation", "s3://numsweep/nothing-here")
    assert missing.returncode == 2 and "s3://numsweep/nothing-here" in missing.stderr
