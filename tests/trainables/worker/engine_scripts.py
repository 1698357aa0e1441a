"""Run a test's DeepSpeed engine script in a fresh Python process (one rank, gloo on a free
127.0.0.1 port given as argv[1]), so its process group and DeepSpeed's state never touch the
test process; the script prints one JSON line last, which is returned."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.servers import free_port
from tests.sweep_runs import ROOT


def run_engine_script(script: str, timeout: float = 300) -> dict[str, Any]:
    """The script's last stdout line as JSON; fails the test with its stderr tail if it fails."""
    run = subprocess.run(
        [sys.executable, "-c", script, str(free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
