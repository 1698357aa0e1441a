"""Starting the embedded Ray instance: a start that Ray gives up on (its node not registered with
the GCS within Ray's fixed 30 s, as on a loaded two-core machine) is cleaned up and made again."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.sweep_runs import ROOT

# In a fresh process: the first start's raylet is frozen (SIGSTOP) as soon as it runs, so it
# never registers with the GCS and Ray's wait runs out, as when a loaded machine starves it of
# CPU. The second start is left alone.
SCRIPT = """
import json, os, signal, threading, time
import psutil
import ray
from orchestrator.run.local_ray import connect

frozen = []

def freeze_the_first_raylet():
    me = psutil.Process()
    while True:
        names = {}
        for child in me.children(recursive=True):
            try:
                names[child.pid] = child.name()
            except psutil.NoSuchProcess:
                pass
        raylet = [pid for pid, name in names.items() if name.startswith("raylet")]
        if raylet:
            os.kill(raylet[0], signal.SIGSTOP)
            frozen.append(raylet[0])
            return
        time.sleep(0.05)

threading.Thread(target=freeze_the_first_raylet, daemon=True).start()
how = connect(num_cpus=1)
answer = ray.get(ray.remote(lambda: 41 + 1).remote())
first_left = psutil.pid_exists(frozen[0]) and psutil.Process(frozen[0]).status() != "zombie"
raylets = [p.pid for p in psutil.Process().children(recursive=True) if p.name() == "raylet"]
ray.shutdown()
print(json.dumps({"how": how, "answer": answer, "frozen": frozen,
                  "first_left": first_left, "raylets": raylets}))
"""


@pytest.mark.slow
def test_a_start_ray_gives_up_on_is_cleaned_up_and_made_again():
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["how"] == "local" and out["answer"] == 42
    assert len(out["frozen"]) == 1  # the first start was the one that failed
    assert not out["first_left"]  # its processes were stopped, not left beside the new ones
    assert len(out["raylets"]) == 1 and out["frozen"][0] not in out["raylets"]
    assert "did not start in time" in run.stderr and "starting it again" in run.stderr
