"""Benchmark: the training step eager and compiled, and DEL against `mle`, on one GPU (or CPU).

    python -m bench.gpu_steps [--device cuda] [--presets tiny xs s l] [--batch 128 64]
                              [--steps 30] [--precision bf16] [--budget-s 420] [--json OUT]

Needs torch, transformers and pydantic only (no Ray, DeepSpeed or optuna), so that it runs on a
lent GPU machine whose image lacks them (bench/README.md says how it was carried there).

1. Step time per preset (the demo's 512-token vocabulary, `--batch` rows x tokens of random
   ids, a third of each row a prompt without labels): forward, `del` loss, backward, gradient
   clipping, AdamW (fused on CUDA), eager against compiled the way `train.compile: on` compiles
   (`trainables.worker.compile_step`: the model through `nn.Module.compile`, the loss through
   `torch.compile`, static shapes, inductor caches under a scratch folder). bf16 is autocast
   over the forward, as `bench.plain_loop` runs on a GPU; the loss computes in fp32.
2. The loss alone at V = 32,000 (`bench.losses`' inputs: 8 x 512 tokens, 20% digit labels):
   `del` against `mle`, eager and compiled, forward + backward, as GPU time with the host
   running ahead (`bench.losses.queued_gpu_ms`) and as synchronised wall time.
3. The step of `--loss-preset` with a 32,000-token vocabulary: `del` against `mle`, eager and
   compiled (what the loss costs inside a real step).

Step times: the median over the steps after the first `--steps // 3` (warm-up, and on the first
step the compile), each step synchronised; the first step's seconds are reported (the compile).
Variants of a part take turns in rounds, so a drift falls on all of them. Every part stops
starting new variants once `--budget-s` seconds have passed, and says which it skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from trainables.losses import NumberVocab, build_loss

DEFAULT_JSON = Path(__file__).resolve().parent / "out" / "gpu_steps.json"
DIGIT_IDS = tuple(range(15, 25))  # as bench.losses: '.' = 13, '0'..'9' = 15..24
DOT_ID = 13
LOSS_VOCAB = 32_000


class Budget:
    """Seconds since the run began, against `--budget-s`."""

    def __init__(self, seconds: float) -> None:
        self.began, self.seconds = time.perf_counter(), seconds

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.began)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def random_batch(
    rows: int, length: int, vocab_size: int, device: torch.device, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (rows, length) with a fifth of them digits, and labels: a prompt third
    ignored (-100), the rest the ids themselves."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(25, vocab_size, (rows, length), generator=gen)
    digits = torch.tensor(DIGIT_IDS)[torch.randint(0, 10, (rows, length), generator=gen)]
    ids = torch.where(torch.rand(rows, length, generator=gen) < 0.2, digits, ids)
    labels = ids.clone()
    labels[:, : length // 3] = -100
    return ids.to(device), labels.to(device)


class StepRunner:
    """One model, loss and AdamW; `step()` runs one training step and returns its seconds."""

    def __init__(
        self,
        preset: str,
        vocab_size: int,
        loss: str,
        compiled: bool,
        bf16: bool,
        batch: tuple[int, int],
        device: torch.device,
    ) -> None:
        from trainables.models.presets import build_model

        self.device, self.bf16 = device, bf16
        self.model = build_model(
            preset, vocab_size, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2
        )
        self.model.to(device).train()
        loss_fn = build_loss(loss, NumberVocab(digit_ids=DIGIT_IDS, dot_id=DOT_ID))
        self.loss_fn = loss_fn
        if compiled:  # as trainables.worker.compile_step.compile_engine does through DeepSpeed
            self.model.compile(dynamic=False)
            self.loss_fn = torch.compile(loss_fn, dynamic=False)
        kwargs = {"fused": True} if device.type == "cuda" else {}
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4, **kwargs)
        self.ids, self.labels = random_batch(*batch, vocab_size, device, seed=0)
        self.mask = torch.ones_like(self.ids)
        counts = {"n_tokens": (self.labels[:, 1:] != -100).sum().float()}
        counts["n_digits"] = torch.isin(self.labels[:, 1:], torch.tensor(DIGIT_IDS, device=device))
        counts["n_digits"] = counts["n_digits"].sum().float()
        self.normalizer = counts  # tensors: a compiled loss sees values, not new constants
        self.times: list[float] = []

    def step(self) -> float:
        sync(self.device)
        began = time.perf_counter()
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            logits = self.model(input_ids=self.ids, attention_mask=self.mask).logits
        out = self.loss_fn(logits, self.labels, self.normalizer)  # logits (B, T, V)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        sync(self.device)
        seconds = time.perf_counter() - began
        self.times.append(seconds)
        return seconds

    def summary(self, warm: int) -> dict[str, float]:
        steady = self.times[warm:] or self.times
        return {
            "first_s": self.times[0],
            "step_ms": 1e3 * statistics.median(steady),
            "steps": len(self.times),
        }


def interleaved(
    runners: dict[str, Callable[[], StepRunner]], steps: int, budget: Budget
) -> dict[str, dict[str, Any]]:
    """Build every runner (skipping those the budget leaves no time for), then step them in
    turns; {variant: summary or {"skipped"/"error": why}}."""
    built: dict[str, StepRunner] = {}
    out: dict[str, dict[str, Any]] = {}
    for name, make in runners.items():
        if budget.left() <= 0:
            out[name] = {"skipped": "out of budget"}
            continue
        try:
            built[name] = make()
            built[name].step()  # the first step: the compile, alone
        except Exception as error:  # one variant failing must not lose the others' numbers
            traceback.print_exc()
            out[name] = {"error": f"{type(error).__name__}: {error}"[:300]}
            built.pop(name, None)
    for _ in range(steps - 1):
        for runner in built.values():
            runner.step()
    for name, runner in built.items():
        out[name] = runner.summary(warm=max(1, steps // 3))
        print(f"  {name:28s} {out[name]['step_ms']:9.2f} ms/step  first {runner.times[0]:.1f} s")
    return out


def step_part(args: argparse.Namespace, device: torch.device, budget: Budget) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    bf16 = args.precision == "bf16"
    for preset in args.presets:
        print(f"step, preset {preset}:", flush=True)

        def make(compiled: bool, preset: str = preset) -> Callable[[], StepRunner]:
            return lambda: StepRunner(preset, 512, "del", compiled, bf16, tuple(args.batch), device)

        runners = {f"{preset} eager": make(False), f"{preset} compiled": make(True)}
        rows[preset] = interleaved(runners, args.steps, budget)
    return rows


def loss_part(args: argparse.Namespace, device: torch.device, budget: Budget) -> dict[str, Any]:
    """`del` vs `mle` alone at V = 32k, eager and compiled."""
    from bench.losses import make_inputs, queued_gpu_ms, time_all_ms

    if budget.left() <= 0:
        return {"skipped": "out of budget"}
    print(f"loss alone, V={LOSS_VOCAB}:", flush=True)
    logits, labels = make_inputs(8, 512, LOSS_VOCAB, device, torch.float32)
    vocab = NumberVocab(digit_ids=DIGIT_IDS, dot_id=DOT_ID)
    fns: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {}
    for name in ("mle", "del"):
        loss_fn = build_loss(name, vocab)
        fns[f"{name} eager"] = lambda lg, lb, fn=loss_fn: fn(lg, lb).loss
        compiled = torch.compile(loss_fn, dynamic=False)
        fns[f"{name} compiled"] = lambda lg, lb, fn=compiled: fn(lg, lb).loss
    wall = time_all_ms(fns, logits, labels, repeats=args.loss_repeats, warmup=3)
    out: dict[str, Any] = {}
    for name, fn in fns.items():
        out[name] = {"wall_ms": wall[name], "gpu_ms": queued_gpu_ms(fn, logits, labels)}
        print(f"  {name:14s} wall {wall[name]:8.3f} ms  GPU {out[name]['gpu_ms']}")
    for how in ("eager", "compiled"):
        base, other = out[f"mle {how}"], out[f"del {how}"]
        for key in ("wall_ms", "gpu_ms"):
            if base[key] and other[key]:
                out[f"del / mle {how} {key}"] = other[key] / base[key]
    return out


def loss_step_part(
    args: argparse.Namespace, device: torch.device, budget: Budget
) -> dict[str, Any]:
    """`del` vs `mle` inside a step of `--loss-preset` at V = 32k, eager and compiled."""
    print(f"step with V={LOSS_VOCAB}, preset {args.loss_preset}:", flush=True)
    bf16 = args.precision == "bf16"
    runners = {
        f"{loss} {'compiled' if compiled else 'eager'}": (
            lambda loss=loss, compiled=compiled: StepRunner(
                args.loss_preset, LOSS_VOCAB, loss, compiled, bf16, tuple(args.batch), device
            )
        )
        for compiled in (False, True)
        for loss in ("mle", "del")
    }
    out = interleaved(runners, args.steps, budget)
    for how in ("eager", "compiled"):
        base, other = out.get(f"mle {how}", {}), out.get(f"del {how}", {})
        if "step_ms" in base and "step_ms" in other:
            out[f"del / mle {how}"] = other["step_ms"] / base["step_ms"]
    return out


def machine(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    else:
        info["cpu"] = platform.processor() or platform.machine()
        info["threads"] = torch.get_num_threads()
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--presets", nargs="+", default=["tiny", "xs", "s", "l"])
    parser.add_argument("--batch", nargs=2, type=int, default=[128, 64], metavar=("ROWS", "LEN"))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--loss-preset", default="s")
    parser.add_argument("--loss-repeats", type=int, default=30)
    parser.add_argument("--parts", nargs="+", default=["loss", "step", "loss_step"])
    parser.add_argument("--budget-s", type=float, default=420.0)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="numsweep-inductor-"))
    budget = Budget(args.budget_s)
    report: dict[str, Any] = {"machine": machine(device), "args": vars(args) | {"json": None}}
    parts = {"loss": loss_part, "step": step_part, "loss_step": loss_step_part}
    for name in args.parts:
        try:
            report[name] = parts[name](args, device, budget)
        except Exception as error:
            traceback.print_exc()
            report[name] = {"error": f"{type(error).__name__}: {error}"[:300]}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=str))  # as far as it got
    print(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
