"""A trial's worker imports DeepSpeed without the MLflow client DeepSpeed's autotuner would pull
in (`compat.deepspeed_private.import_deepspeed`), and MLflow stays importable afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.sweep_runs import ROOT


def run_python(code: str) -> list[str]:
    """The words of the last line `code` prints (DeepSpeed logs its accelerator to stdout)."""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1].split()


@pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="the tracking extra")
def test_the_worker_imports_deepspeed_but_not_mlflow() -> None:
    # Without the guard, `import deepspeed` alone imports mlflow (the first line checks that
    # the premise still holds for the installed DeepSpeed, so the second means something).
    assert run_python("import sys, deepspeed; print('mlflow' in sys.modules)") == ["True"]
    worker = (
        "import sys, trainables.worker.loop;"
        " print('deepspeed' in sys.modules, 'mlflow' in sys.modules)"
    )
    assert run_python(worker) == ["True", "False"]
    after = (
        "import sys; from compat.deepspeed_private import import_deepspeed;"
        " import_deepspeed();"
        " import mlflow; print(sys.modules['mlflow'] is mlflow, hasattr(mlflow, 'log_metric'))"
    )
    assert run_python(after) == ["True", "True"]
