"""`train.optimizer`: DeepSpeed's FusedAdam (the default) or torch's AdamW, with the same
hyper-parameters; torch's fused kernel requested on CUDA devices only; an op build announced
only for the optimizer that needs one; and real ZeRO-2 engines built each way, with the line a
trial prints about its engine (`trainables.worker.trial_setup.describe_engine`), taking the same
steps up to float rounding."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.trainables.worker.engine_scripts import run_engine_script
from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config
from trainables.worker.deepspeed_ops import trial_ops


def test_the_default_is_deepspeeds_fused_adam_as_before():
    assert TrainConfig().optimizer == "fused_adam"
    params = deepspeed_config(TrainConfig(), 1, bf16=False, cuda=True)["optimizer"]["params"]
    assert params == {"lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.0}


def test_torch_adamw_keeps_the_hyper_parameters_and_fuses_on_cuda_only():
    train = TrainConfig(optimizer="torch_adamw", lr=1e-3, weight_decay=0.1)
    fused = TrainConfig(lr=1e-3, weight_decay=0.1)
    on_cuda = deepspeed_config(train, 1, bf16=True, cuda=True)["optimizer"]
    on_cpu = deepspeed_config(train, 1, bf16=False, cuda=False)["optimizer"]
    assert on_cuda["type"] == on_cpu["type"] == "AdamW"
    same = deepspeed_config(fused, 1, bf16=True, cuda=True)["optimizer"]["params"]
    assert on_cuda["params"] == {**same, "torch_adam": True, "fused": True}
    assert on_cpu["params"] == {**same, "torch_adam": True}  # no `fused` on a CPU


def test_an_unknown_optimizer_or_torch_adamw_with_offload_is_refused():
    with pytest.raises(ValidationError, match="optimizer"):
        TrainConfig(optimizer="sgd")
    with pytest.raises(ValidationError, match=r"train\.optimizer: torch_adamw"):
        TrainConfig(optimizer="torch_adamw", offload_optimizer=True)


def test_only_fused_adam_needs_an_op_build():
    assert trial_ops(offload_optimizer=False) == ["fused_adam"]
    assert trial_ops(offload_optimizer=False, optimizer="torch_adamw") == []
    assert trial_ops(offload_optimizer=True) == ["cpu_adam"]


# In a fresh process (a one-rank gloo group of its own, DeepSpeed's CPU accelerator): a `tiny`
# model's ZeRO-2 engine for each optimizer as `build_trial` configures it, three steps on seeded
# batches; the optimizer DeepSpeed built, its `fused` setting, how far the weights moved, and how
# far apart the two optimizers left them.
SCRIPT = """
import json, os, sys
os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[1],
                  RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
import torch
from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping
from trainables.models.presets import build_model
from trainables.worker.trial_setup import deepspeed, describe_engine
from compat.deepspeed_private import init_distributed_without_shm_comm

init_distributed_without_shm_comm(deepspeed, "gloo", dist_init_required=None)
out, after = {}, {}
for name in ("fused_adam", "torch_adamw"):
    torch.manual_seed(0)
    model = build_model("tiny", 64, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    train = TrainConfig(micro_batch_size=2, zero_stage=2, optimizer=name)
    config, _ = worker_clipping(deepspeed_config(train, 1, bf16=False, cuda=False))
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=list(model.parameters()), config=config
    )
    before = [p.detach().clone() for p in engine.module.parameters()]
    for step in range(3):
        ids = torch.randint(3, 64, (2, 12), generator=torch.Generator().manual_seed(1 + step))
        engine.backward(engine(input_ids=ids, labels=ids).loss)
        engine.step()
    after[name] = [p.detach().clone() for p in engine.module.parameters()]
    moved = sum(float((p - b).abs().sum()) for p, b in zip(after[name], before))
    largest_move = max(float((p - b).abs().max()) for p, b in zip(after[name], before))
    basic = engine.basic_optimizer
    out[name] = {
        "class": f"{type(basic).__module__}.{type(basic).__qualname__}",
        "wrapper": type(engine.optimizer).__name__,
        "fused": basic.param_groups[0].get("fused"),
        "lr": basic.param_groups[0]["lr"],
        "betas": list(basic.param_groups[0]["betas"]),
        "moved": moved,
        "largest_move": largest_move,
        "line": describe_engine(engine, torch.device("cpu"), 1),
    }
out["largest_difference"] = max(
    float((a - b).abs().max()) for a, b in zip(after["fused_adam"], after["torch_adamw"])
)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_zero2_engines_build_each_optimizer_and_step():
    out = run_engine_script(SCRIPT)
    assert out["fused_adam"]["class"] == "deepspeed.ops.adam.fused_adam.FusedAdam"
    assert out["torch_adamw"]["class"] == "torch.optim.adamw.AdamW"
    assert out["torch_adamw"]["fused"] in (None, False)  # torch's default kernel on a CPU
    # The line a trial prints (the GPU check's report quotes it).
    assert out["torch_adamw"]["line"] == (
        "numsweep: torch.distributed backend gloo, 1 rank(s) on cpu, optimizer AdamW (not fused), "
        "ZeRO stage 2"
    )
    assert "optimizer FusedAdam, ZeRO stage 2" in out["fused_adam"]["line"]
    for name in ("fused_adam", "torch_adamw"):
        got = out[name]
        assert got["wrapper"] == "DeepSpeedZeroOptimizer", name  # ZeRO-2 took it
        assert got["betas"] == [0.9, 0.95] and got["lr"] == pytest.approx(3e-3), name
        assert got["moved"] > 0, name  # the steps changed the weights
    # The same update: from the same weights and batches, three steps of either optimizer leave
    # weights that differ by float rounding only (each step moves a weight by up to lr = 3e-3;
    # Adam's first steps move most by nearly that). So the demo, which trains with torch's
    # AdamW to need no compiled op, takes the steps it took with FusedAdam up to rounding.
    assert out["fused_adam"]["largest_move"] > 1e-3
    assert out["largest_difference"] <= 1e-4 * out["fused_adam"]["largest_move"]
