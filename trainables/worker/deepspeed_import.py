"""Importing DeepSpeed in a trial's worker without the MLflow client it drags in.

`import deepspeed` imports `deepspeed.autotuning.autotuner` (through its config module), which
imports `mlflow` when it is installed, for DeepSpeed's autotuner to log to. A trial never runs
that autotuner, and numsweep's MLflow tracking lives in the driver (a Tune callback), so in a
worker the import is pure start-up cost: 1.0 s of the 7 s a trial's imports take here (2-core
Xeon, `python -X importtime -c "import trainables.worker.loop"`, with the `tracking` extra
installed), paid again by every trial. While DeepSpeed is imported, `mlflow` is marked absent, so
the autotuner's `try: import mlflow` takes its fallback; a process that imported MLflow already
keeps it.
"""

from __future__ import annotations

from types import ModuleType

from trainables.worker.absent_imports import import_with_absent

# Imported only by DeepSpeed features a trial does not use (the autotuner's logging).
UNUSED_BY_TRIALS = ("mlflow",)


def import_deepspeed() -> ModuleType:
    """`import deepspeed`, with the modules of `UNUSED_BY_TRIALS` not yet imported kept out."""
    return import_with_absent("deepspeed", UNUSED_BY_TRIALS)
