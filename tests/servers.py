"""Local servers the tests start on 127.0.0.1 (MLflow's tracking server, moto's S3 server): a free
port, a wait until the server answers, and a stop that ends the server's whole process group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    """Until `url` answers (an MLflow server takes over a minute to start on a busy machine)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"server exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer in {timeout} s")


def start_server(
    command: list[str], url: str, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """`command` started in a process group of its own (`env`: added to this environment),
    once `url` answers."""
    proc = subprocess.Popen(
        command,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_http(url, proc)
    except AssertionError:
        stop(proc)
        raise AssertionError(log.read_text()[-3000:]) from None
    return proc


def stop(proc: subprocess.Popen) -> None:
    """End a server started by `start_server` and its children (its own process group)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        # No test reads a server after it is stopped; MLflow's took up to 26 s to stop in full.
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
