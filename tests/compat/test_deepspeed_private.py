"""A trial's worker imports DeepSpeed without the MLflow client DeepSpeed's autotuner would pull
in (`compat.deepspeed_private.import_deepspeed`), and MLflow stays importable afterwards; its
process group is set up without DeepSpeed's shared-memory op, and two ranks still train
(`init_distributed_without_shm_comm`)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.servers import free_port
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


# One rank of a two-rank gloo group (argv: port, rank, how): DeepSpeed's process group set up as a
# trial's is (by torch first, then `init_distributed`), either plainly with `build_shm_op` only
# counted (`count`) or through `init_distributed_without_shm_comm` (`without`); then one ZeRO-2
# step of a `tiny` model on this rank's own batch. Prints the calls counted, whether the op's
# module was loaded, the backend's op, and the updated weights' sum.
TWO_RANKS = """
import json, os, sys
port, rank, how = sys.argv[1:4]
os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=rank,
                  LOCAL_RANK=rank, WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
import torch, torch.distributed as dist
from compat.deepspeed_private import import_deepspeed, init_distributed_without_shm_comm
import importlib
backends = importlib.import_module("deepspeed.comm.torch")  # not `import as`: that binds torch
from trainables.config import TrainConfig
from trainables.models.presets import build_model
from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping

deepspeed = import_deepspeed()
dist.init_process_group("gloo")
calls = []
if how == "count":
    backends.build_shm_op = lambda: calls.append(1)
    deepspeed.init_distributed(dist_backend="gloo", dist_init_required=False)
else:
    init_distributed_without_shm_comm(deepspeed, "gloo")
torch.manual_seed(0)
model = build_model("tiny", 64, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
train = TrainConfig(micro_batch_size=2, zero_stage=2, optimizer="torch_adamw")
config, _ = worker_clipping(deepspeed_config(train, 2, bf16=False, cuda=False))
engine, *_ = deepspeed.initialize(model=model, model_parameters=list(model.parameters()),
                                  config=config, dist_init_required=False)
ids = torch.randint(3, 64, (2, 12), generator=torch.Generator().manual_seed(1 + int(rank)))
engine.backward(engine(input_ids=ids, labels=ids).loss)
engine.step()
print(json.dumps({
    "calls": len(calls),
    "op_loaded": any(m.endswith("deepspeed_shm_comm_op") for m in sys.modules),
    "shm_comm_op": repr(deepspeed.comm.comm.cdb.shm_comm_op),
    "weights": float(sum(p.detach().double().sum() for p in engine.module.parameters())),
}))
"""


def two_ranks(how: str) -> list[dict]:
    """Both ranks' last JSON lines."""
    port = str(free_port())
    ranks = [
        subprocess.Popen(
            [sys.executable, "-c", TWO_RANKS, port, str(rank), how],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in (0, 1)
    ]
    outs = []
    for proc in ranks:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def test_two_ranks_train_without_deepspeeds_shared_memory_op() -> None:
    # The premise: DeepSpeed's own init_distributed asks for the op once per rank (counted here,
    # not built), so leaving it out is a change.
    assert [rank["calls"] for rank in two_ranks("count")] == [1, 1]
    ranks = two_ranks("without")
    for rank in ranks:
        assert rank["op_loaded"] is False and rank["shm_comm_op"] == "None"
    # Different batches on the two ranks, the same weights after the step: ZeRO-2's gradient
    # reduce-scatter and weight all-gather ran (over torch.distributed) without the op.
    assert ranks[0]["weights"] == ranks[1]["weights"]
