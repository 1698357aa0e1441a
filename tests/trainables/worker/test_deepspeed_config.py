"""Who clips a step's gradients: DeepSpeed's engine, or the worker where the engine would not keep
the norm (`trainables.worker.deepspeed_config.worker_clipping`,
`trainables.worker.clip_gradients`)."""

from __future__ import annotations

import pytest
import torch

from trainables.config import TrainConfig
from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping


def test_at_stage_0_in_fp32_the_worker_clips_at_the_configured_norm():
    config = deepspeed_config(TrainConfig(zero_stage=0, grad_clip=0.7), 1, bf16=False)
    engine_config, clip = worker_clipping(config)
    assert clip == 0.7
    assert engine_config["gradient_clipping"] == 0.0  # DeepSpeed does not clip a second time
    assert {k: v for k, v in engine_config.items() if k != "gradient_clipping"} == {
        k: v for k, v in config.items() if k != "gradient_clipping"
    }
    assert config["gradient_clipping"] == 0.7  # the input is left as it was
    # A user's DeepSpeed JSON that sets the clip wins there, as it would for DeepSpeed.
    user = TrainConfig(zero_stage=0, deepspeed_config={"gradient_clipping": 0.25})
    assert worker_clipping(deepspeed_config(user, 1, bf16=False))[1] == 0.25
    # No clip asked: the worker still measures the norm, clipping at nothing.
    off = deepspeed_config(TrainConfig(zero_stage=0, grad_clip=0.0), 2, bf16=False)
    assert worker_clipping(off)[1] == 0.0


@pytest.mark.parametrize(
    "train, bf16",
    [(TrainConfig(zero_stage=2), False), (TrainConfig(zero_stage=3), False), (TrainConfig(), True)],
)
def test_zero_stages_and_bf16_keep_deepspeed_clipping(train, bf16):
    config = deepspeed_config(train, 2, bf16=bf16)
    assert worker_clipping(config) == (config, None)


@pytest.mark.parametrize("max_norm", [0.05, 1e6, 0.0])
def test_the_worker_clips_as_deepspeed_does(max_norm):
    """Against DeepSpeed's clip written out by hand (deepspeed.runtime.utils.clip_grad_norm_, what
    its stage-0 fp32 engine calls): the norm is the L2 norm of every gradient element (here in
    float64); when max_norm / (norm + 1e-6) is below 1 every gradient is scaled by it, else
    left alone; 0 means no clip. The worker returns the norm before clipping."""
    from trainables.worker.loop import clip_gradients

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    model(torch.randn(32, 8)).square().sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    expected_norm = float(torch.cat([g.flatten().double() for g in before]).norm())
    coef = max_norm / (expected_norm + 1e-6) if max_norm else 1.0

    norm = clip_gradients(model, max_norm)

    assert norm == pytest.approx(expected_norm, rel=1e-6)
    assert (coef < 1) == (max_norm == 0.05)  # the cases are what they say
    for param, raw in zip(model.parameters(), before, strict=True):
        if coef < 1:
            torch.testing.assert_close(param.grad, raw * coef, rtol=1e-6, atol=0)
        else:
            assert torch.equal(param.grad, raw)  # nothing to clip: the gradients untouched
