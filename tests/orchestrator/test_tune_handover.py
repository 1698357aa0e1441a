"""orchestrator.run.tune_handover: a trial whose Train run finishes while Tune is still busy with an
earlier result hands every report over and ends (Ray's own callback deadlocks there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_last_report_reaches_tune_while_tune_is_slow(tmp_path) -> None:
    command = [sys.executable, "-m", "tests.orchestrator.handover_run", "numsweep", str(tmp_path)]
    # A deadlock would never end: the limit turns it into a failure (the run takes ~25 s).
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen == {"steps": [0, 1], "last": 1}
