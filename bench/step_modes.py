"""Benchmark: one numsweep training step (DeepSpeed engine, ZeRO-2, one CPU thread) in fp32 and
bf16, eager and compiled, side by side as ratios.

    python -m bench.step_modes [--models tiny xs s smollm2-shape] [--modes fp32 bf16 fp32+c]
                               [--rounds 2] [--steps 30] [--json OUT]

Each (model, mode) runs in a fresh process (`--one`), as a trial's worker would: the model
(a preset with the demo's 512-token vocabulary, or `smollm2-shape`: SmolLM2-135M's dimensions
and 49,152-token vocabulary, randomly initialised, so no download), the trial's DeepSpeed config
(`trainables.worker.deepspeed_config`, bf16 mode or fp32), and `--steps` steps of forward, `mle`
loss, backward and AdamW on fixed-size batches of random token ids (presets 16 x 48 tokens, like the
demo's batches padded to 48; smollm2-shape 8 x 128). Compiled modes (`+c`) go through
`trainables.worker.compile_step` (engine.compile, compiled loss, inductor cache under a scratch
cache_dir shared by the run, so only a model's first compiled process compiles). Rounds take
the modes in turn (A B C A B C ...), so a drift in the machine's load falls on all of them; the
step time of a process is the median of its steps after the first quarter, and a mode's is the
median over the rounds. Ratios: fp32-eager step / mode step (above 1: faster). The first
step of each process (compile or cache load included) is reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "bench" / "out" / "step_modes.json"
# SmolLM2-135M's dimensions (its config.json): what `model.path: smollm2` fine-tunes.
SMOLLM2_SHAPE = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
}
BATCH = {"preset": (16, 48), "smollm2-shape": (8, 128)}


def build(model_name: str) -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from trainables.models.presets import build_model

    if model_name == "smollm2-shape":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return LlamaForCausalLM(LlamaConfig(**SMOLLM2_SHAPE))
    return build_model(model_name, 512, 0, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def one_rank_process() -> None:
    """Make this process a one-rank torch.distributed world on one CPU thread, as a trial with
    one worker of one CPU is (before torch, DeepSpeed or a process group start)."""
    os.environ.update(
        RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(29000 + os.getpid() % 2000),
    )  # fmt: skip
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch

    torch.set_num_threads(1)


def one(model_name: str, mode: str, steps: int, cache_dir: str) -> dict[str, Any]:
    """Time `steps` steps of `model_name` in `mode` in this process."""
    one_rank_process()
    import deepspeed
    import torch

    from compat.deepspeed_private import init_distributed_without_shm_comm
    from trainables.config import TrainConfig
    from trainables.losses import build_loss
    from trainables.models.presets import count_parameters
    from trainables.worker.compile_step import compile_engine
    from trainables.worker.deepspeed_config import deepspeed_config
    from trainables.worker.deepspeed_ops import announce_jit_builds, trial_ops

    precision, compiled = mode.split("+")[0], mode.endswith("+c")
    announce_jit_builds(trial_ops(offload_optimizer=False))  # the trials' op cache
    init_distributed_without_shm_comm(deepspeed, "gloo", dist_init_required=None)
    model = build(model_name)
    n_params = count_parameters(model)["total"]
    train = TrainConfig(micro_batch_size=BATCH.get(model_name, BATCH["preset"])[0], lr=1e-4)
    config = deepspeed_config(train, 1, bf16=precision == "bf16")
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=list(model.parameters()), config=config
    )
    loss_fn = build_loss("mle", None)
    loss_step = compile_engine(engine, loss_fn, cache_dir) if compiled else loss_fn
    rows, length = BATCH.get(model_name, BATCH["preset"])
    vocab = model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        ids = torch.randint(3, vocab, (rows, length), generator=generator)
        labels = ids.clone()
        labels[:, : length // 3] = -100  # a prompt carries no loss
        n_tokens = float((labels[:, 1:] != -100).sum())
        normalizer: dict[str, Any] = {"n_tokens": n_tokens}
        if compiled:
            normalizer = {"n_tokens": torch.tensor(n_tokens)}
        logits = engine(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        out = loss_step(logits, labels, normalizer)
        engine.backward(out.loss, scale_wrt_gas=False)
        engine.step()
        float(out.loss.detach())
        times.append(time.perf_counter() - began)
    warm = times[max(1, steps // 4) :] or times
    return {
        "model": model_name,
        "mode": mode,
        "params": n_params,
        "first_step_s": times[0],
        "step_s": statistics.median(warm),
        "load": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.step_modes", description=__doc__)
    parser.add_argument("--models", nargs="+", default=["tiny", "xs", "s", "smollm2-shape"])
    parser.add_argument("--modes", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30, help="steps per process (presets)")
    parser.add_argument("--big-steps", type=int, default=4, help="steps for smollm2-shape")
    parser.add_argument("--cache-dir", help="inductor cache (default: a scratch folder)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument(
        "--one", nargs=3, metavar=("MODEL", "MODE", "STEPS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.one:
        model, mode, steps = args.one
        print(json.dumps(one(model, mode, int(steps), args.cache_dir)), flush=True)
        return 0
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-step-modes-") as scratch:
        cache = args.cache_dir or scratch
        for model in args.models:
            steps = args.big_steps if model == "smollm2-shape" else args.steps
            for _ in range(args.rounds):
                for mode in args.modes:
                    command = [sys.executable, "-m", "bench.step_modes", "--cache-dir", cache]
                    command += ["--one", model, mode, str(steps)]
                    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
                    if done.returncode != 0:
                        raise SystemExit(f"{model} {mode} failed:\n{done.stderr[-3000:]}")
                    runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
                    print(json.dumps(runs[-1]), flush=True)
    table = summarise(runs, args.modes)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": runs, "table": table}, indent=1))
    print(f"\n| model | params | {' | '.join(args.modes)} | load |")
    print("|---|---:|" + "---:|" * len(args.modes) + "---|")
    for row in table:
        cells = " | ".join(
            f"{row[m]['step_s'] * 1e3:.1f} ms ({row[m]['ratio']:.2f}×)" for m in args.modes
        )
        print(f"| {row['model']} | {row['params'] / 1e6:.2f}M | {cells} | {row['load']} |")
    return 0


def summarise(runs: list[dict[str, Any]], modes: list[str]) -> list[dict[str, Any]]:
    """Per model: each mode's median step over the rounds and its ratio to the first mode's."""
    table = []
    for model in dict.fromkeys(r["model"] for r in runs):
        mine = [r for r in runs if r["model"] == model]
        row: dict[str, Any] = {"model": model, "params": mine[0]["params"]}
        for mode in modes:
            of = [r for r in mine if r["mode"] == mode]
            row[mode] = {
                "step_s": statistics.median(r["step_s"] for r in of),
                "first_step_s": max(r["first_step_s"] for r in of),
            }
        base = row[modes[0]]["step_s"]
        for mode in modes:
            row[mode]["ratio"] = base / row[mode]["step_s"]
        loads = [r["load"] for r in mine]
        row["load"] = f"{min(loads):.1f}–{max(loads):.1f}"
        table.append(row)
    return table


if __name__ == "__main__":
    raise SystemExit(main())
