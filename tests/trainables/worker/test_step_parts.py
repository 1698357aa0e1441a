"""The worker loop's small parts: step statistics, the start-up timeline, the bf16 choice, and
the padding a compiled step trains on."""

from __future__ import annotations

import math

import pytest
import torch

from trainables.worker.compile_step import PAD_MULTIPLE, pad_batch
from trainables.worker.precision import CPU_BF16_MIN_PARAMS, cpu_has_bf16, use_bf16
from trainables.worker.startup import StartupTimeline
from trainables.worker.step_stats import StepResult, StepStats


def test_step_stats_report_means_since_the_last_report():
    stats = StepStats(parts=("ce", "aux"))
    for loss, ce, aux, tokens, seconds, norm in [
        (3.0, 2.0, 1.0, 100, 0.5, 2.0),
        (1.0, 1.0, 0.0, 60, 0.3, 4.0),
    ]:
        stats.add(StepResult(loss, {"ce": ce, "aux": aux}, tokens, tokens + 5, norm, seconds))
    metrics = stats.metrics()
    # By hand: means over the two steps, tokens per second = 160 / 0.8.
    assert metrics["train/loss"] == 2.0
    assert metrics["train/ce"] == 1.5 and metrics["train/aux"] == 0.5
    assert metrics["train/grad_norm"] == 3.0
    assert metrics["perf/tokens_per_s"] == pytest.approx(200.0)
    assert metrics["perf/step_time_s"] == pytest.approx(0.4)
    stats.reset()
    stats.add(StepResult(5.0, {"ce": 4.0, "aux": 1.0}, 10, 10, 1.0, 1.0))
    assert stats.metrics()["train/loss"] == 5.0 and stats.metrics()["train/ce"] == 4.0


def test_startup_timeline_is_reported_once_relative_to_the_launch():
    timeline = StartupTimeline(launched_at=1000.0, imported_at=1004.0)
    timeline.mark("model")
    first = timeline.marks["model"]
    timeline.mark("model")  # a phase keeps its first end
    timeline.took("compile", 12.5)
    metrics = timeline.take_metrics()
    assert metrics["perf/startup/launched_at"] == 1000.0
    assert metrics["perf/startup/imports_s"] == 4.0
    assert metrics["perf/startup/model_s"] == first - 1000.0
    assert metrics["perf/startup/compile_s"] == 12.5
    assert timeline.take_metrics() == {}
    # a mark after the report (a resumed loop's first step, say) stays silent
    timeline.mark("first_step")
    timeline.took("compile", 3.0)
    assert timeline.take_metrics() == {}
    assert StartupTimeline(launched_at=None, imported_at=1.0).take_metrics() == {}


def test_cpu_bf16_is_read_from_the_cpu_flags(tmp_path):
    with_amx = tmp_path / "amx"
    with_amx.write_text("processor\t: 0\nflags\t\t: fpu sse avx512f amx_bf16 amx_tile\n")
    without = tmp_path / "plain"
    without.write_text("processor\t: 0\nflags\t\t: fpu sse avx2\n")
    assert cpu_has_bf16(str(with_amx)) and not cpu_has_bf16(str(without))
    assert not cpu_has_bf16(str(tmp_path / "missing"))


def test_precision_auto_on_a_cpu_follows_the_model_size():
    assert use_bf16("bf16", cuda=False) and not use_bf16("fp32", n_params=10**9, cuda=False)
    assert not use_bf16("auto", n_params=CPU_BF16_MIN_PARAMS - 1, cuda=False)
    assert not use_bf16("auto", n_params=None, cuda=False)  # unknown size: fp32
    assert use_bf16("auto", n_params=CPU_BF16_MIN_PARAMS, cuda=False) == cpu_has_bf16()
    with pytest.raises(ValueError, match=r"train\.precision"):
        use_bf16("fp16")


def test_padding_a_batch_leaves_the_loss_and_gradient_unchanged():
    """A compiled step trains on right-padded batches: the tiny model's loss and gradients on
    the padded batch equal those on the batch as collated."""
    from trainables.losses import build_loss
    from trainables.models.presets import build_model

    model = build_model("tiny", 300, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 300, (4, 37), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 30:] = 0  # one shorter sequence, padded as collate pads
    labels = torch.where(mask.bool(), ids, -100)
    labels[:, :5] = -100  # the prompt
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    padded = pad_batch(batch, pad_id=0)
    assert padded["input_ids"].shape == (4, 48) and 48 % PAD_MULTIPLE == 0
    loss_fn = build_loss("mle", None)

    def loss_and_grads(b):
        model.zero_grad()
        logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
        loss = loss_fn(logits, b["labels"]).loss
        loss.backward()
        return float(loss), [p.grad.clone() for p in model.parameters()]

    loss, grads = loss_and_grads(batch)
    padded_loss, padded_grads = loss_and_grads(padded)
    assert math.isclose(padded_loss, loss, rel_tol=1e-6)
    for g, h in zip(grads, padded_grads, strict=True):
        torch.testing.assert_close(h, g, rtol=1e-4, atol=1e-6)
    assert pad_batch(padded, pad_id=0) is padded  # already a multiple: unchanged


def test_train_compile_resolves_and_refuses_zero3():
    from pydantic import ValidationError

    from trainables.config import TrialConfig
    from trainables.worker.compile_step import AUTO_COMPILE_MIN_STEPS, compile_wanted

    def wanted(cuda: bool = False, model: dict | None = None, **train) -> bool:
        config = {"train": train} if model is None else {"train": train, "model": model}
        return compile_wanted(TrialConfig.model_validate(config), cuda=cuda)

    enough = AUTO_COMPILE_MIN_STEPS
    assert wanted(compile="on") and not wanted(compile="off", cuda=True)
    assert not wanted(cuda=True, steps=enough)  # the default: off
    # auto: a preset on a CUDA device from enough steps; never on a CPU
    assert wanted(cuda=True, compile="auto", steps=enough)
    assert not wanted(compile="auto", steps=enough)
    assert not wanted(cuda=True, compile="auto", steps=enough - 1)
    assert not wanted(cuda=True, compile="auto", steps=enough, zero_stage=3)
    pretrained = {"preset": None, "path": "some/model"}
    assert not wanted(cuda=True, compile="auto", steps=enough, model=pretrained)
    with pytest.raises(ValidationError, match="zero_stage"):
        TrialConfig.model_validate({"train": {"compile": "on", "zero_stage": 3}})
