"""Benchmark: a trial's generation evaluation against plain `model.generate`, on the same prompts.

    python -m bench.generation [--model-path smollm2 | --preset tiny] [--examples 256]
                               [--batch-sizes 8 32] [--max-new-tokens 16] [--json OUT]

The prompts are a trial's held-out generated problems (study 5's pilot data by default: the
`easy` level of five arithmetic and rounding modules), with the chat template when the model
has one. numsweep's side is `trainables.worker.evaluation.generate_answers` (left-padded batches,
greedy, KV cache), the function a trial's evaluation calls, at each `--batch-sizes`; the plain
side is what a script without numsweep writes: `model.generate` on one prompt at a time, greedy,
same new-token cap. Both run one after another in this process, on one thread per core. Printed:
seconds, answers per second, the speed-up over the plain loop, and how many answers are the same
text (batched and unbatched greedy decoding may part where float sums differ with padding) and
the same exact-match score.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from trainables.config import TrialConfig
from trainables.data.batching import encode_prompts
from trainables.worker.evaluation import (
    PROMPT_LENGTH_FACTOR,
    generate_answers,
    score_generation,
)
from trainables.worker.trial_inputs import load_model_and_tokenizer, load_splits

DEFAULT_JSON = Path("bench/out/generation.json")
DATA = {
    "source": "mathgen",
    "modules": [
        "arithmetic__add_or_sub",
        "arithmetic__add_sub_multiple",
        "arithmetic__mul",
        "arithmetic__div",
        "numbers__round_number",
    ],
    "difficulty": "easy",
    "n_train": 64,
    "max_length": 96,
}
MAX_PROMPT = PROMPT_LENGTH_FACTOR * DATA["max_length"]
"""The prompt length a trial's evaluation allows for this data (`trainables.worker.evaluation`)."""


def plain_generate(model: Any, tokenizer: Any, records: list, max_new_tokens: int, chat: bool):
    """`model.generate` on one prompt at a time: the loop numsweep's batching is measured by."""
    texts = []
    for record in records:
        batch = encode_prompts(tokenizer, [record], MAX_PROMPT, chat_template=chat)
        out = model.generate(
            **batch,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )  # (1, P + new)
        texts.append(
            tokenizer.decode(out[0, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        )
    return texts


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both sides on the same records; every number measured."""
    model_cfg = {"preset": None, "path": args.model_path, "chat_template": True}
    if args.preset:
        model_cfg = {"preset": args.preset}
    data = {**DATA, "n_test": args.examples}
    cfg = TrialConfig.model_validate(
        {"model": model_cfg, "data": data, "eval": {"generate_examples": args.examples}}
    )
    model, tokenizer = load_model_and_tokenizer(cfg.model, cfg.cache_dir, seed=0, data=cfg.data)
    model.eval()
    records = load_splits(cfg, tokenizer).generation["mathgen"]
    chat = cfg.model.chat_template
    started = time.perf_counter()
    with torch.no_grad():
        plain = plain_generate(model, tokenizer, records, args.max_new_tokens, chat)
    report: dict[str, Any] = {
        "model": args.preset or args.model_path,
        "examples": len(records),
        "max_new_tokens": args.max_new_tokens,
        "threads": torch.get_num_threads(),
        "plain": {"seconds": time.perf_counter() - started, **_scores(records, plain)},
        "numsweep": {},
    }
    for size in args.batch_sizes:
        started = time.perf_counter()
        texts = generate_answers(
            model,
            tokenizer,
            records,
            batch_size=size,
            max_new_tokens=args.max_new_tokens,
            max_prompt_length=MAX_PROMPT,
            chat_template=chat,
            device=torch.device("cpu"),
            rank=0,
            world_size=1,
        )
        seconds = time.perf_counter() - started
        same = sum(a == b for a, b in zip(texts, plain, strict=True))
        report["numsweep"][str(size)] = {
            "seconds": seconds,
            "speedup": report["plain"]["seconds"] / seconds,
            "same_text": same,
            **_scores(records, texts),
        }
    return report


def _scores(records: list, texts: list[str]) -> dict[str, float]:
    scores = score_generation("mathgen", records, texts)
    return {"exact_match": scores["exact_match"], "log_error": scores["log_error"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.generation", description=__doc__)
    parser.add_argument("--model-path", default="smollm2")
    parser.add_argument("--preset", help="a preset model instead (no download, for a quick run)")
    parser.add_argument("--examples", type=int, default=256)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = parser.parse_args(argv)
    report = run(args)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    plain = report["plain"]
    print(f"{report['model']}: {report['examples']} prompts, {report['max_new_tokens']} new tokens")
    print("| side | batch | seconds | answers/s | × plain | same text | exact match |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    n = report["examples"]
    print(
        f"| plain model.generate | 1 | {plain['seconds']:.1f} | {n / plain['seconds']:.1f} | "
        f"1.00 | {n} | {plain['exact_match']:.3f} |"
    )
    for size, r in report["numsweep"].items():
        print(
            f"| numsweep generate_answers | {size} | {r['seconds']:.1f} | "
            f"{n / r['seconds']:.1f} | {r['speedup']:.2f} | {r['same_text']} | "
            f"{r['exact_match']:.3f} |"
        )
    print(f"\nall numbers: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
