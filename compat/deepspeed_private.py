"""numsweep's uses of DeepSpeed beyond its documented API, checked against DeepSpeed 0.19.8
(`DEEPSPEED`); each function calls `require(DEEPSPEED)` first.

- `import_deepspeed` (for trainables.worker.trial_setup): `import deepspeed` imports `mlflow` (its
  autotuner's logging) only when it imports.
- `skip_backward_allreduce` (for trainables.worker.trial_setup): the engine's
  `enable_backward_allreduce` switch (set by the engine, read in its backward and step).

`import_deepspeed`: `import deepspeed` imports `deepspeed.autotuning.autotuner` (through its
config module), which imports `mlflow` when it is installed, for DeepSpeed's autotuner to log to.
A trial never runs that autotuner, and numsweep's MLflow tracking lives in the driver (a Tune
callback), so in a worker the import is pure start-up cost: 1.0 s of the 7 s a trial's imports
take here (2-core Xeon, `python -X importtime -c "import trainables.worker.loop"`, with the
`tracking` extra installed), paid again by every trial. While DeepSpeed is imported, `mlflow` is
marked absent, so the autotuner's `try: import mlflow` takes its fallback; a process that
imported MLflow already keeps it.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from compat.absent_imports import import_with_absent
from compat.versions import CheckedRange, require

DEEPSPEED = CheckedRange(
    "deepspeed", "==0.19.8", checked="0.19.8", module="compat/deepspeed_private.py"
)

# Imported only by DeepSpeed features a trial does not use (the autotuner's logging).
UNUSED_BY_TRIALS = ("mlflow",)


def import_deepspeed() -> ModuleType:
    """`import deepspeed`, with the modules of `UNUSED_BY_TRIALS` not yet imported kept out."""
    require(DEEPSPEED)
    return import_with_absent("deepspeed", UNUSED_BY_TRIALS)


def skip_backward_allreduce(engine: Any) -> bool:
    """Turn off `engine`'s gradient all-reduce after each backward; returns whether it could.

    `enable_backward_allreduce` is DeepSpeed's own switch, not a documented setting: the caller
    decides where the all-reduce is the identity (one rank, no ZeRO, fp32;
    `trainables.worker.trial_setup.skip_one_rank_all_reduce`), and
    tests/trainables/worker/test_trial_setup.py checks the gradients stay the same."""
    require(DEEPSPEED)
    if not hasattr(engine, "enable_backward_allreduce"):
        return False
    engine.enable_backward_allreduce = False
    return True
