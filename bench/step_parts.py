"""Benchmark: where a numsweep training step spends the time a plain PyTorch step does not, part
by part, side by side.

    python -m bench.step_parts [--preset tiny] [--modes plain zero2 zero0 zero0-stock]
                               [--steps 400] [--rounds 2] [--together] [--json OUT]

Each mode runs in its own process (one torch thread, a one-rank gloo process group as a trial
with one worker has), taking turns over `--rounds`; with `--together`, all modes run in one
process per round, each on its own copy of the model, taking turns step by step on the same
batches, so that a change in the machine's speed falls on every mode alike (the ratios of a
two-vCPU virtual machine moved by 10-20% between runs of the separate processes). Every step is
split into the same parts:

- `counts`: the step's token counts (`target_counts`) and, for numsweep, their sum over ranks;
- `forward`, `loss` (`mle`, the global-batch normaliser), `backward`;
- `step`: the optimizer (plain: `clip_grad_norm_` + `torch.optim.AdamW`; numsweep:
  `engine.step()` of the trial's DeepSpeed config at ZeRO stage 2, the default, or 0;
  `zero0` as the worker runs it (no all-reduce over one rank,
  `trainables.worker.trial_setup.skip_one_rank_all_reduce`; torch's `clip_grad_norm_` before the
  step, `trainables.worker.deepspeed_config.worker_clipping`), `zero0-stock` DeepSpeed's engine
  alone);
- `totals`: the (loss, parts) contributions summed over ranks as the worker does;
- `norm`: reading the gradient norm.

Batches are random token ids of the demo's shape (16 x 48 tokens, the first 16 unlabelled, a
512-token vocabulary). A part's time is the median over the steps after the first quarter, and
a mode's the median over its rounds. The worker's own step is `trainables.worker.train_step`;
this mirrors its calls in order without Ray Train, so the parts can be timed one by one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.step_modes import one_rank_process

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "bench" / "out" / "step_parts.json"
PARTS = ("counts", "forward", "loss", "backward", "step", "totals", "norm", "all")
ROWS, LENGTH, PROMPT, VOCAB = 16, 48, 16, 512


def one(preset: str, modes: list[str], steps: int) -> dict[str, dict[str, float]]:
    """Time `steps` steps of each of `modes` in this process, the modes taking turns step by step
    (each on its own copy of the model); median milliseconds per part, per mode."""
    one_rank_process()
    import torch

    from trainables.losses import build_loss
    from trainables.models.presets import build_model

    loss_fn = build_loss("mle", None)
    runners = {}
    for mode in modes:
        model = build_model(preset, VOCAB, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        runners[mode] = (model, *_engine(model, mode), loss_fn)
    generator = torch.Generator().manual_seed(0)
    times = {mode: {part: [] for part in PARTS} for mode in modes}
    for _ in range(steps):
        ids = torch.randint(3, VOCAB, (ROWS, LENGTH), generator=generator)
        for mode, runner in runners.items():
            marks = _step(ids, *runner)
            for part, began, ended in zip(PARTS, marks, marks[1:], strict=False):
                times[mode][part].append(ended - began)
            times[mode]["all"].append(marks[-1] - marks[0])
    warm = steps // 4
    return {
        mode: {part: 1e3 * statistics.median(values[warm:]) for part, values in parts.items()}
        for mode, parts in times.items()
    }


def _step(
    ids: Any, model: Any, engine: Any, optimizer: Any, clip: float | None, loss_fn: Any
) -> list[float]:
    """One training step on the batch `ids` (B, T); the time at each part's end, after a start."""
    import torch

    from trainables.losses import target_counts
    from trainables.metrics.distributed import sum_across_ranks
    from trainables.worker.loop import clip_gradients

    marks = [time.perf_counter()]
    labels = ids.clone()
    labels[:, :PROMPT] = -100
    mask = torch.ones_like(ids)
    n_tokens = float(target_counts(labels, None)["n_tokens"])
    if engine is not None:
        n_tokens, _, _ = sum_across_ranks([n_tokens, 0.0, float(mask.sum())])
    marks.append(time.perf_counter())
    logits = (engine or model)(input_ids=ids, attention_mask=mask).logits  # (B, T, V)
    marks.append(time.perf_counter())
    out = loss_fn(logits, labels, {"n_tokens": n_tokens, "n_digits": 0.0})
    marks.append(time.perf_counter())
    if engine is not None:
        engine.backward(out.loss, scale_wrt_gas=False)
        marks.append(time.perf_counter())
        norm = None if clip is None else clip_gradients(model, clip)  # as the worker clips
        engine.step()
        marks.append(time.perf_counter())
        totals = torch.stack([out.loss.detach()]).to(torch.float64)
        sum_across_ranks(totals).tolist()
        marks.append(time.perf_counter())
        norm = engine.get_global_grad_norm() if norm is None else norm
        norm is None or float(norm)  # stage 0 alone keeps no norm
    else:
        out.loss.backward()
        marks.append(time.perf_counter())
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        float(out.loss.detach())
        marks.append(time.perf_counter())
        float(norm)
    marks.append(time.perf_counter())
    return marks


def _engine(model: Any, mode: str) -> tuple[Any, Any, float | None]:
    """(DeepSpeed engine, None, the worker's clip) for a numsweep mode, (None, AdamW, None) for
    the plain loop."""
    import torch

    if mode == "plain":
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0
        )
        return None, optimizer, None
    import deepspeed

    from compat.deepspeed_private import init_distributed_without_shm_comm
    from trainables.config import TrainConfig
    from trainables.worker.deepspeed_config import deepspeed_config, worker_clipping
    from trainables.worker.deepspeed_ops import announce_jit_builds, trial_ops

    announce_jit_builds(trial_ops(offload_optimizer=False))
    init_distributed_without_shm_comm(deepspeed, "gloo", dist_init_required=None)
    stage = {"zero2": 2, "zero0": 0, "zero0-stock": 0}[mode]
    train = TrainConfig(micro_batch_size=ROWS, lr=1e-4, zero_stage=stage)
    config, clip = deepspeed_config(train, 1, bf16=False), None
    if mode != "zero0-stock":  # as the worker runs it; `zero0-stock`: DeepSpeed's engine alone
        config, clip = worker_clipping(config)
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=list(model.parameters()), config=config
    )
    if mode != "zero0-stock":
        from trainables.worker.trial_setup import skip_one_rank_all_reduce

        skip_one_rank_all_reduce(engine, clip)
    return engine, None, clip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--modes", nargs="+", default=["plain", "zero2", "zero0"])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument(
        "--together",
        action="store_true",
        help="all modes in one process per round, taking turns step by step",
    )
    parser.add_argument("--one", nargs="+", metavar="PRESET MODE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one[0], args.one[1:], args.steps)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in args.modes}
    groups = [args.modes] if args.together else [[mode] for mode in args.modes]
    for _ in range(args.rounds):
        for modes in groups:
            command = [sys.executable, "-m", "bench.step_parts", "--one", args.preset, *modes]
            done = subprocess.run(
                [*command, "--steps", str(args.steps)],
                cwd=ROOT, capture_output=True, text=True, check=True,
            )  # fmt: skip
            for mode, parts in json.loads(done.stdout.strip().splitlines()[-1]).items():
                runs[mode].append(parts)
    medians = {
        mode: {part: statistics.median(r[part] for r in rows) for part in PARTS}
        for mode, rows in runs.items()
    }
    print(f"{args.preset}, {ROWS} x {LENGTH} tokens, one thread; ms per step (median)\n")
    print("| mode | " + " | ".join(PARTS) + " | plain / mode |")
    print("|---|" + "---:|" * (len(PARTS) + 1))
    plain = medians.get("plain", {}).get("all")
    for mode, parts in medians.items():
        ratio = f"{plain / parts['all']:.2f}" if plain else ""
        print(f"| {mode} | " + " | ".join(f"{parts[p]:.2f}" for p in PARTS) + f" | {ratio} |")
    print(f"\nload average {os.getloadavg()}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"medians": medians, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
