"""Where a sweep's output goes (orchestrator.run.terminal, compat.ray_private's routing of the
cluster's output): the pieces in this process, then a real short sweep under a pseudo-terminal,
read as a person reads it. The piped case is test_sweep_e2e's run (its output is captured
through pipes)."""

from __future__ import annotations

import io
import logging
import os
import pty
import select
import subprocess
import time
import warnings

import pytest

from compat.ray_private import ROUTED, route_worker_output
from orchestrator.run.terminal import SweepOutput, log_directory, plain
from tests.sweep_runs import ROOT, _command, line_kinds, write_sweep


def test_plain_removes_colour_and_cursor_codes() -> None:
    coloured = (
        "\x1b[36m(TrainController pid=726)\x1b[0m Requesting \x1b[1m\x1b[32murl\x1b[39m\x1b[K"
    )
    assert plain(coloured) == "(TrainController pid=726) Requesting url"


def test_the_clusters_output_is_routed_as_lines_and_put_back() -> None:
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    before = list(dispatcher.handlers)
    written: list[str] = []
    restore = route_worker_output(written.append)
    assert [name for name, _ in dispatcher.handlers if name == ROUTED] == [ROUTED]
    dispatcher.emit(
        {
            "lines": ["Setting up process group", "built successfully"],
            "pid": "t1003",
            "ip": "10.0.0.2",
            "localhost": "10.0.0.1",
            "actor_name": "RayTrainWorker",
            "is_err": False,
        }
    )
    dispatcher.emit({"lines": ["plain"], "pid": "t7", "ip": "h", "localhost": "h", "is_err": True})
    restore()
    # (only this test's lines: a Ray instance another test left in this process may forward too)
    assert [line for line in written if "pid=t" in line] == [
        "(RayTrainWorker pid=t1003, ip=10.0.0.2) Setting up process group",
        "(RayTrainWorker pid=t1003, ip=10.0.0.2) built successfully",
        "(pid=t7) plain",
    ]
    assert dispatcher.handlers == before


def test_quiet_sends_the_libraries_logs_to_the_experiment(tmp_path, capfd) -> None:
    import optuna

    saved = {name: set(logging.getLogger(name).handlers) for name in ("ray", "optuna")}
    with SweepOutput(str(tmp_path), "e", verbose=False) as output:
        assert output.logs is not None
        assert output.logs.directory == log_directory(str(tmp_path), "e")
        logging.getLogger("ray.tune.tune").warning("\x1b[33mslow\x1b[0m result")
        optuna.logging.get_logger("optuna.storages").warning("study created")
        warnings.warn("a library's warning", UserWarning, stacklevel=1)
        print("numsweep: mine")
    out, err = capfd.readouterr()
    assert "numsweep: mine\n" in out
    for said in ("slow", "study created", "a library's warning"):
        assert said not in out + err, said
    logged = output.logs.driver.read_text()
    assert "WARNING ray.tune.tune: slow result" in logged  # without its colour codes
    assert "optuna.storages: study created" in logged and "a library's warning" in logged
    assert output.logs.workers.read_text().startswith("==== numsweep ")
    # Put back as it was: the libraries' own terminal handlers again.
    assert {name: set(logging.getLogger(name).handlers) for name in saved} == saved
    assert logging.getLogger("ray").handlers and logging.getLogger("optuna").handlers


def test_verbose_into_a_pipe_prints_ray_without_colours(tmp_path, capsys) -> None:
    # Ray's own handler, writing to a pipe-like stream (not a terminal) for this test.
    ray_handler = next(
        h for h in logging.getLogger("ray").handlers if type(h).__name__ != "LogCaptureHandler"
    )
    pipe = io.StringIO()
    stream = ray_handler.setStream(pipe)
    try:
        with SweepOutput(str(tmp_path), "e", verbose=True) as output:
            assert output.logs is None and os.environ["RAY_COLOR_PREFIX"] == "0"
            logging.getLogger("ray").warning(
                "dashboard at \x1b[1m\x1b[32mhttp://127.0.0.1:8265\x1b[39m\x1b[22m"
            )
            output.connected()  # the cluster's output: on stdout, as plain lines
            from ray._private.ray_logging import global_worker_stdstream_dispatcher

            global_worker_stdstream_dispatcher.emit(
                {"lines": ["\x1b[1mbold\x1b[0m"], "pid": "t9", "ip": "h", "localhost": "h"}
            )
    finally:
        ray_handler.setStream(stream)
    assert "(pid=t9) bold\n" in capsys.readouterr().out
    assert "dashboard at http://127.0.0.1:8265" in pipe.getvalue()
    assert "\x1b" not in pipe.getvalue()
    assert os.environ.get("RAY_COLOR_PREFIX") != "0"
    assert not (tmp_path / "experiments").exists()  # verbose writes no log files


SWEEP = {
    "experiment": "tty",
    "mode": "search",
    "trial": {
        "model": {"preset": "tiny", "vocab_size": 512},
        "data": {"modules": ["arithmetic__add_or_sub"], "n_train": 64, "n_test": 16},
        "train": {"steps": 4, "micro_batch_size": 8, "warmup_steps": 1},
        "eval": {"every": 2, "batch_size": 16, "generate_examples": 4, "max_new_tokens": 4},
    },
    "search": {"num_trials": 1, "losses": ["mle"], "sampler": "random"},
    "resources": {"workers_per_trial": 1, "cpus_per_worker": 1, "max_concurrent_trials": 1},
}


def run_in_a_terminal(args: list[str], timeout: float = 600) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as its stdin, stdout and stderr; its exit code and
    everything it wrote there."""
    command, env = _command(tuple(args))
    main, child = pty.openpty()
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdin=child, stdout=child, stderr=child, start_new_session=True
    )
    os.close(child)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 1.0)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # EIO: the child's side is closed
                    break
                if not data:
                    break
                chunks.append(data)
        returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        os.close(main)
    return returncode, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_a_sweep_on_a_terminal_shows_only_numsweeps_lines(tmp_path) -> None:
    results = tmp_path / "results"
    code, text = run_in_a_terminal(
        ["sweep", str(write_sweep(tmp_path, SWEEP)), "--results", str(results)]
    )
    assert code == 0, text[-3000:]
    # At exit colorama (initialised by an import of Ray's autoscaler CLI) writes one style reset
    # to a stdout that is a terminal: invisible there, and never written into a pipe.
    text = text.removesuffix("\x1b[0m")
    kinds = line_kinds(text)
    other = [line for kind, line in kinds if kind == "other"]
    assert other == [], other
    seen = {kind for kind, _ in kinds}
    assert {"numsweep", "progress", "table", "summary", "next"} <= seen, seen
    assert "failed trial" not in seen and "warning" not in seen
    # The progress line is redrawn in place ("\r" … "\x1b[K"); no other escape code is written.
    assert "\r" + "tty: " in text and "\x1b[K" in text
    assert "\x1b" not in text.replace("\x1b[K", "")
    logs = results / "experiments" / "tty" / "logs"
    assert f"numsweep: Ray's and the trials' output in {logs}/" in text
    workers = (logs / "workers.log").read_text()
    assert "(RayTrainWorker pid=" in workers and "\x1b" not in workers
    assert "Started a local Ray instance" in (logs / "driver.log").read_text()
