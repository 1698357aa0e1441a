"""Study 4, item 5: how CE's decomposition moves with the number of scored tokens, on SmolLM2-135M
and on one of the study's own models (README, "Scored tokens"):

    python studies/scaling_code/scored_tokens.py OUT.json CHECKPOINT_DIR PRESET [MAX_TOKENS]

Both models read the study's held-out files (lr_grid.yaml's corpus and split, `seeds.data` 0),
each with its own tokenizer, packed as the study packs them (128 tokens, every token scored).
Every scored token's rank error and log P is kept once (`ranked_tokens`, what the evaluation's
`CEDecomposition` accumulates), then decomposed at n = 2^7 (one sequence), 2^8, … scored tokens
two ways:

- prefix: the first n tokens, as `eval.scored_tokens: n` scores them (the content changes too);
- subsample: n tokens drawn uniformly without replacement from all MAX_TOKENS, mean over
  DRAWS draws (the same tokens' population at every n: what moves is the estimator alone).

CE is an unbiased mean at every n; the error entropy is a plug-in entropy over the ranks seen,
so it grows with n while rare ranks keep appearing, and log-confidence (the log of a sum over
the ranks seen) with it. CHECKPOINT_DIR is a trial checkpoint (its `numsweep/` DeepSpeed
files, the model trained with PRESET); the study's checkpoints stay local (not committed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from orchestrator.sweep.sweep_file import load_sweep
from trainables.config import TrialConfig
from trainables.data import text_files
from trainables.metrics import CEDecomposition
from trainables.metrics.decomposition import ranked_tokens
from trainables.models.presets import build_model
from trainables.worker.trial_inputs import load_smollm2, load_tokenizer

STUDY = Path(__file__).resolve().parent
DRAWS = 20
BATCH = 8


def study_trial() -> TrialConfig:
    """The study's trial settings (corpus, split, packing) as lr_grid.yaml gives them."""
    return load_sweep(STUDY / "lr_grid.yaml").trial


def held_out_sequences(tokenizer: Any, trial: TrialConfig) -> list[list[int]]:
    """The held-out files of data seed 0, packed into sequences of max_length tokens."""
    documents = text_files.read_documents(trial.data)
    _, held_out = text_files.split_documents(documents, trial.data, trial.seed_for("data"))
    packed = text_files.pack(tokenizer, held_out, trial.data.max_length)
    return [s["input_ids"] for s in packed]


@torch.no_grad()
def ranked(model: torch.nn.Module, sequences: list[list[int]], limit: int) -> tuple[Any, Any]:
    """(rank error, log P) of the first `limit` scored tokens of `sequences`, in order."""
    model.eval()
    ranks, log_ps, have = [], [], 0
    for start in range(0, len(sequences), BATCH):
        ids = torch.tensor(sequences[start : start + BATCH])  # (B, T)
        logits = model(input_ids=ids).logits  # (B, T, V)
        r, lp = ranked_tokens(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        ranks.append(r)
        log_ps.append(lp)
        have += r.numel()
        if have >= limit:
            break
    if have < limit:
        raise ValueError(f"the held-out files hold {have} scored tokens, fewer than {limit}")
    return torch.cat(ranks)[:limit], torch.cat(log_ps)[:limit]


def decompose(rank: torch.Tensor, log_p: torch.Tensor, vocab: int) -> dict[str, float]:
    """CE, EE, SA, log-confidence of these tokens, plus how many distinct ranks they show."""
    dec = CEDecomposition(vocab_size=vocab)
    dec.add_ranked(rank, log_p)
    values = dec.compute()
    values["ranks_seen"] = float(torch.unique(rank).numel())
    return values


def curves(rank: torch.Tensor, log_p: torch.Tensor, vocab: int) -> list[dict[str, Any]]:
    """The decomposition at every power of two up to the number of tokens kept (and at it)."""
    total = rank.numel()
    sizes = [2**k for k in range(7, 30) if 2**k < total] + [total]
    rng = np.random.default_rng(0)
    rows = []
    for n in sizes:
        prefix = decompose(rank[:n], log_p[:n], vocab)
        draws = [rng.choice(total, size=n, replace=False) for _ in range(DRAWS)]
        sub = [decompose(rank[d], log_p[d], vocab) for d in map(torch.from_numpy, draws)]
        mean = {k: float(np.mean([s[k] for s in sub])) for k in sub[0]}
        rows.append({"n": n, "prefix": prefix, "subsample": mean})
    return rows


def model_curves(model: torch.nn.Module, tokenizer: Any, limit: int, trial: TrialConfig) -> dict:
    rank, log_p = ranked(model, held_out_sequences(tokenizer, trial), limit)
    vocab = int(model.get_output_embeddings().weight.shape[0])
    return {"vocab": vocab, "tokens": limit, "curves": curves(rank, log_p, vocab)}


def study_model(checkpoint: Path, preset: str, trial: TrialConfig) -> tuple[Any, Any]:
    """The study's `preset` model with the weights of a trial checkpoint, and its tokenizer."""
    model_config = trial.model.model_copy(update={"preset": preset})
    tokenizer = load_tokenizer(model_config, trial.cache_dir, data=trial.data, data_seed=0)
    ids = {f"{k}_token_id": getattr(tokenizer, f"{k}_token_id") for k in ("pad", "bos", "eos")}
    model = build_model(preset, len(tokenizer), 0, **ids)
    states = torch.load(checkpoint / "numsweep" / "mp_rank_00_model_states.pt", map_location="cpu")
    model.load_state_dict(states["module"])
    return model, tokenizer


def table(name: str, result: dict) -> str:
    lines = [
        f"{name} (vocabulary {result['vocab']}):",
        "| n | CE | EE | SA | log C | EE/CE | ranks seen | subsample EE/CE | subsample log C |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["curves"]:
        p, s = r["prefix"], r["subsample"]
        lines.append(
            f"| {r['n']} | {p['ce']:.3f} | {p['error_entropy']:.3f} | {p['self_alignment']:.3f} "
            f"| {p['log_confidence']:.3f} | {p['error_entropy'] / p['ce']:.3f} "
            f"| {p['ranks_seen']:.0f} | {s['error_entropy'] / s['ce']:.3f} "
            f"| {s['log_confidence']:.3f} |"
        )
    return "\n".join(lines)


def main(out: str, checkpoint: str, preset: str, limit: int) -> None:
    torch.set_num_threads(2)
    trial = study_trial()
    results = {}
    model, tokenizer = study_model(Path(checkpoint), preset, trial)
    results[preset] = model_curves(model, tokenizer, limit, trial)
    print(table(preset, results[preset]), flush=True)
    model, tokenizer = load_smollm2(Path(trial.cache_dir) / "models")
    results["SmolLM2-135M-Instruct"] = model_curves(model, tokenizer, limit, trial)
    print(table("SmolLM2-135M-Instruct", results["SmolLM2-135M-Instruct"]))
    Path(out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 65536)
