"""Benchmark: forward+backward time and peak memory of every loss, relative to `mle`.

    python -m bench.losses [--device cpu|cuda] [--vocab 32000 152064] [--batch 8] [--seq 512]
                           [--repeats N] [--warmup N] [--dtype fp32|bf16] [--json OUT]

Every loss sees the same random logits (B, T, V) (a leaf with requires_grad) and the same
labels: the first 10% of each row ignored (-100, a prompt), then 20% digit ids, 3% '.', the
rest random other tokens. EMO gets a frozen (V, 576) cost embedding (SmolLM2-135M's width).

Time: median over `repeats` timed calls of loss_fn(logits, labels).loss.backward(), after
`warmup` untimed calls per loss; the losses take turns (one call each per round, the order
rotated every round) so that load from other processes spreads over all of them. On CUDA
the device is synchronised before and after each call.

Peak memory ("peak MB"): the extra memory one forward+backward needs on top of its inputs
(logits, labels, embedding) — including the logits' gradient, which every loss produces.
- CUDA: torch.cuda.max_memory_allocated() during the call minus memory_allocated() before.
- CPU: the kernel's peak resident set size (VmHWM, reset through /proc/self/clear_refs just
  before the call) minus the resident set size before the call. It counts every page the
  process touched, so it includes allocator slack; large tensors are mmap-ed by glibc and
  returned on free, so consecutive measurements do not see each other's buffers.

CUDA also reports "GPU ms (queued)": the GPU time of one call when the host has queued it
ahead (see `queued_gpu_ms`), i.e. the cost without the host's kernel-launch overhead.

A reference row "torch_ce" is plain F.cross_entropy on the sliced, shifted logits (the usual
Hugging Face computation), so the `mle` baseline can be judged as well.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from compat.torch_private import hold_gpu
from trainables.losses import LOSSES, NumberVocab, build_loss

# Digit and '.' ids as in GPT-2-like byte-level vocabularies ('.' = 13, '0'..'9' = 15..24).
DOT_ID = 13
DIGIT_IDS = tuple(range(15, 25))
EMO_DIM = 576
DIGIT_SHARE = 0.20
DOT_SHARE = 0.03
PROMPT_SHARE = 0.10
# About 0.25 s of GPU sleep at H200 clocks: ample head start for the host to queue 5 calls.
_SLEEP_CYCLES = 500_000_000


def make_inputs(
    batch: int, seq: int, vocab_size: int, device: torch.device, dtype: torch.dtype, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random logits (B, T, V) as a grad leaf and labels (B, T) with digits, dots and -100."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(25, vocab_size, (batch, seq), generator=gen)
    kind = torch.rand(batch, seq, generator=gen)
    digits = torch.tensor(DIGIT_IDS)[torch.randint(0, 10, (batch, seq), generator=gen)]
    labels = torch.where(kind < DIGIT_SHARE, digits, labels)
    labels = torch.where((kind >= DIGIT_SHARE) & (kind < DIGIT_SHARE + DOT_SHARE), DOT_ID, labels)
    labels[:, : int(PROMPT_SHARE * seq)] = -100
    logits = torch.randn(batch, seq, vocab_size, generator=gen, dtype=torch.float32)
    logits = logits.to(device=device, dtype=dtype).requires_grad_(True)
    return logits, labels.to(device)


def torch_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The reference: slice-and-shift cross-entropy as Hugging Face computes it."""
    vocab_size = logits.shape[-1]
    return F.cross_entropy(
        logits[:, :-1].float().reshape(-1, vocab_size), labels[:, 1:].reshape(-1)
    )


def loss_callables(
    vocab_size: int, device: torch.device, names: list[str]
) -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    vocab = NumberVocab(digit_ids=DIGIT_IDS, dot_id=DOT_ID)
    out: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {}
    for name in names:
        params: dict[str, Any] = {}
        if "cost_embedding" in LOSSES[name].required_inputs:
            gen = torch.Generator().manual_seed(1)
            params["cost_embedding"] = torch.randn(vocab_size, EMO_DIM, generator=gen).to(device)
        loss_fn = build_loss(name, vocab, **params)
        out[name] = lambda lg, lb, fn=loss_fn: fn(lg, lb).loss
    out["torch_ce"] = torch_cross_entropy
    return out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rss_kib(field: str) -> int:
    """A memory field of /proc/self/status in KiB (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_extra_mib(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    logits: torch.Tensor,
    labels: torch.Tensor,
) -> float:
    """Extra memory (MiB) one forward+backward takes above what exists before it."""
    device = logits.device
    logits.grad = None
    gc.collect()
    if device.type == "cuda":
        _sync(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn(logits, labels).backward()
        _sync(device)
        peak = torch.cuda.max_memory_allocated(device) - before
        logits.grad = None
        return peak / 2**20
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before_kib = _rss_kib("VmRSS")
    fn(logits, labels).backward()
    peak_kib = _rss_kib("VmHWM") - before_kib
    logits.grad = None
    return peak_kib / 1024


def time_all_ms(
    fns: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]],
    logits: torch.Tensor,
    labels: torch.Tensor,
    repeats: int,
    warmup: int,
) -> dict[str, float]:
    """Median wall time (ms) of one forward+backward per loss.

    The losses are timed in interleaved rounds (loss order rotated every round), so that
    a slow stretch of a shared machine hits every loss alike instead of one of them.
    """
    device = logits.device
    names = list(fns)
    for name in names:
        for _ in range(warmup):
            fns[name](logits, labels).backward()
            logits.grad = None
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            logits.grad = None
            _sync(device)
            start = time.perf_counter()
            fns[name](logits, labels).backward()
            _sync(device)
            samples[name].append((time.perf_counter() - start) * 1e3)
    logits.grad = None
    return {name: statistics.median(times) for name, times in samples.items()}


def queued_gpu_ms(
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    logits: torch.Tensor,
    labels: torch.Tensor,
    calls: int = 5,
) -> float | None:
    """CUDA only: GPU time (ms) of one forward+backward when the host runs ahead.

    A long sleep kernel holds the GPU while the host queues `calls` forward+backward passes
    behind it; CUDA events around the queued passes then time the GPU alone, without the
    host's kernel-launch gaps that the synchronised wall time includes. This is the cost a
    training step pays when the host is ahead of the GPU (the usual case). None on CPU.
    """
    if logits.device.type != "cuda":
        return None
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    _sync(logits.device)
    if not hold_gpu(_SLEEP_CYCLES):  # keeps the GPU busy while the host queues the calls
        return None
    start.record()
    host_start = time.perf_counter()
    for _ in range(calls):
        fn(logits, labels).backward()
        logits.grad = None
    # `start` follows the sleep: if it has not run yet, the host queued every call while the
    # GPU was still asleep, so the GPU never waited for a launch
    host_ahead = not start.query()
    host_ms = (time.perf_counter() - host_start) * 1e3
    end.record()
    _sync(logits.device)
    if not host_ahead:
        print(f"  queued GPU time unreliable (host took {host_ms:.1f} ms)", file=sys.stderr)
        return None
    return start.elapsed_time(end) / calls


def bench_vocab(
    vocab_size: int, args: argparse.Namespace, device: torch.device, dtype: torch.dtype
) -> list[dict[str, Any]]:
    logits, labels = make_inputs(args.batch, args.seq, vocab_size, device, dtype)
    fns = loss_callables(vocab_size, device, args.losses)
    times = time_all_ms(fns, logits, labels, args.repeats, args.warmup)
    rows = []
    for name, fn in fns.items():
        mib = peak_extra_mib(fn, logits, labels)
        gpu = queued_gpu_ms(fn, logits, labels)
        rows.append(
            {
                "vocab": vocab_size,
                "loss": name,
                "ms": times[name],
                "gpu_ms": gpu,
                "peak_mib": mib,
            }
        )
        print(f"  V={vocab_size} {name:12s} {times[name]:9.2f} ms {mib:9.1f} MiB", file=sys.stderr)
    del logits, labels, fns
    gc.collect()
    base = next(r for r in rows if r["loss"] == "mle")
    for r in rows:
        r["x_mle_time"] = r["ms"] / base["ms"]
        r["x_mle_gpu"] = r["gpu_ms"] / base["gpu_ms"] if r["gpu_ms"] and base["gpu_ms"] else None
        # tiny inputs fit in memory the process already holds: no measurable peak
        r["x_mle_memory"] = r["peak_mib"] / base["peak_mib"] if base["peak_mib"] > 0 else None
    return rows


def markdown(rows: list[dict[str, Any]], header: str) -> str:
    with_gpu = any(r["gpu_ms"] is not None for r in rows)
    lines = [header, ""]
    for vocab_size in dict.fromkeys(r["vocab"] for r in rows):
        head = "| loss | ms fwd+bwd | × mle | peak MB | × mle |"
        rule = "|---|---:|---:|---:|---:|"
        if with_gpu:
            head += " GPU ms (queued) | × mle |"
            rule += "---:|---:|"
        lines += [f"V = {vocab_size}", "", head, rule]
        for r in rows:
            if r["vocab"] != vocab_size:
                continue
            x_memory = "–" if r["x_mle_memory"] is None else f"{r['x_mle_memory']:.3f}"
            line = (
                f"| {r['loss']} | {r['ms']:.2f} | {r['x_mle_time']:.3f} | "
                f"{r['peak_mib']:.0f} | {x_memory} |"
            )
            if with_gpu:
                gpu = "–" if r["gpu_ms"] is None else f"{r['gpu_ms']:.3f}"
                x_gpu = "–" if r["x_mle_gpu"] is None else f"{r['x_mle_gpu']:.3f}"
                line += f" {gpu} | {x_gpu} |"
            lines.append(line)
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.losses", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--vocab", type=int, nargs="+", default=[32000, 152064])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--losses", nargs="+", default=list(LOSSES), choices=list(LOSSES))
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if "mle" not in args.losses:
        args.losses = ["mle", *args.losses]
    for key in ("batch", "seq", "repeats"):
        if getattr(args, key) < 1:
            parser.error(f"--{key} must be >= 1")
    if args.warmup < 0 or any(v < 25 for v in args.vocab):
        parser.error("--warmup must be >= 0 and every --vocab >= 25 (digits are ids 15..24)")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device available")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    rows: list[dict[str, Any]] = []
    for vocab_size in args.vocab:
        rows += bench_vocab(vocab_size, args, device, dtype)
    what = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    header = (
        f"{what}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
        f"logits {args.batch}×{args.seq}×V {args.dtype}; median of {args.repeats} after "
        f"{args.warmup} warm-up"
    )
    print(markdown(rows, header))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"header": header, "args": {k: str(v) for k, v in vars(args).items()}}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
