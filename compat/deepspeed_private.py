"""numsweep's uses of DeepSpeed beyond its documented API, checked against DeepSpeed 0.19.8
(`DEEPSPEED`); each function calls `require(DEEPSPEED)` first.

- `import_deepspeed` (for trainables.worker.trial_setup): `import deepspeed` imports `mlflow` (its
  autotuner's logging) only when it imports.
- `skip_backward_allreduce` (for trainables.worker.trial_setup): the engine's
  `enable_backward_allreduce` switch (set by the engine, read in its backward and step).
- `init_distributed_without_shm_comm` (for trainables.worker.trial_setup): `deepspeed.comm.torch`'s
  module function `build_shm_op`, replaced while `deepspeed.init_distributed` runs.

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

import importlib
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


def init_distributed_without_shm_comm(
    deepspeed: ModuleType, backend: str, *, dist_init_required: bool | None = False
) -> None:
    """`deepspeed.init_distributed(dist_backend=backend, dist_init_required=...)` without the
    shared-memory collectives op (`deepspeed_shm_comm`) that DeepSpeed's CPU accelerator loads
    there for every rank.

    In DeepSpeed 0.19.8 that op serves one call only, `inference_all_reduce` (the AutoTP
    inference layers of `deepspeed.module_inject`); a training engine's all-reduce, all-gather
    and reduce-scatter go through `torch.distributed` whether it is loaded or not
    (`deepspeed/comm/torch.py`). Loading it is not free: a compiled op, built just in time (tens
    of seconds on 2 cores) unless DeepSpeed was reinstalled with it prebuilt, and a shared-memory
    segment set up per rank. Without it `TorchBackend.shm_comm_op` is None, the state DeepSpeed
    itself takes when the op is not compatible. `dist_init_required`: False where the process
    group is set up already (a trial's, by Ray Train), None to let DeepSpeed set it up.
    tests/compat/test_deepspeed_private.py checks that the op stays unloaded and that two ranks
    still train."""
    require(DEEPSPEED)
    # By module name: the package attribute `deepspeed.comm.torch` is torch itself (`deepspeed.comm`
    # star-imports its `comm` module, which imports torch), so `import ... as` would bind torch.
    backends = importlib.import_module("deepspeed.comm.torch")
    build = backends.build_shm_op
    backends.build_shm_op = lambda: None
    try:
        deepspeed.init_distributed(dist_backend=backend, dist_init_required=dist_init_required)
    finally:
        backends.build_shm_op = build


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
