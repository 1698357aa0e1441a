"""trainables.worker.trial_setup: a one-rank engine without ZeRO skips DeepSpeed's gradient
all-reduce (`skip_one_rank_all_reduce`), with the installed DeepSpeed, and its gradients stay the
same."""

from __future__ import annotations

import pytest

from tests.trainables.worker.engine_scripts import run_engine_script

# In a fresh process (a one-rank gloo group of its own): for each case, a `tiny` model's
# engine as `build_trial` makes it, DeepSpeed's `allreduce_gradients` counted, one backward and
# step, and the gradients after the backward. The model and batch are seeded: every case starts
# from the same weights and data.
SCRIPT = """
import json, os, sys
os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1],
                  RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
import torch
from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping
from trainables.models.presets import build_model
from trainables.worker.trial_setup import deepspeed, skip_one_rank_all_reduce
from compat.deepspeed_private import init_distributed_without_shm_comm

init_distributed_without_shm_comm(deepspeed, "gloo", dist_init_required=None)

def case(stage, skip):
    torch.manual_seed(0)
    model = build_model("tiny", 64, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    train = TrainConfig(micro_batch_size=2, zero_stage=stage)
    config, clip = worker_clipping(deepspeed_config(train, 1, bf16=False))
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=list(model.parameters()), config=config
    )
    skipped = skip_one_rank_all_reduce(engine, clip) if skip else False
    calls = []
    reduce = engine.allreduce_gradients
    def counted(*args, **kwargs):
        calls.append(1)
        return reduce(*args, **kwargs)
    engine.allreduce_gradients = counted
    ids = torch.randint(3, 64, (2, 12), generator=torch.Generator().manual_seed(1))  # (B, T)
    engine.backward(engine(input_ids=ids, labels=ids).loss)
    grads = [p.grad.clone() for p in engine.module.parameters()] if stage == 0 else []
    engine.step()
    return {"skipped": skipped, "calls": len(calls)}, grads

stock, stock_grads = case(0, skip=False)
skipping, skipping_grads = case(0, skip=True)
zero2, _ = case(2, skip=True)
same = len(stock_grads) == len(skipping_grads) > 0 and all(
    torch.equal(a, b) for a, b in zip(stock_grads, skipping_grads)
)
print(json.dumps({"stock": stock, "skipping": skipping, "zero2": zero2, "same_grads": same}))
"""


@pytest.mark.slow
def test_a_one_rank_engine_without_zero_skips_its_all_reduce_and_keeps_its_gradients():
    out = run_engine_script(SCRIPT)
    # The premise: DeepSpeed's stage-0 engine all-reduces once a step on its own (if this
    # fails, the installed DeepSpeed moved its all-reduce and the skip needs a new look).
    assert out["stock"] == {"skipped": False, "calls": 1}
    # Skipped: no all-reduce, the very same gradients (over one rank it is the identity).
    assert out["skipping"] == {"skipped": True, "calls": 0}
    assert out["same_grads"]
    # ZeRO-2 keeps it: its all-reduce pass also fills the optimizer's gradient partitions.
    assert out["zero2"]["skipped"] is False and out["zero2"]["calls"] >= 1
