"""Streaming decomposition of cross-entropy into error entropy, self-alignment and confidence
("What Scales in Cross-Entropy Scaling Law?", 2025).

For every scored token let the rank-based error RBE be the number of vocabulary entries whose logit
is strictly above the correct token's. Over N tokens, with N_e of them at RBE = e:

    p_e = N_e / N                              share of tokens at rank error e
    Q_e = exp(mean over those tokens of log P)   geometric mean of the correct-token probability
    C   = Σ_e Q_e,   q_e = Q_e / C
    EE  = −Σ_e p_e log p_e                     error entropy
    SA  = Σ_e p_e log(p_e / q_e)               self-alignment, KL(p ‖ q)
    LC  = log C                                log confidence

and CE = −(1/N) Σ log P = −Σ_e p_e log Q_e = −Σ_e p_e (log q_e + log C) = EE + SA − LC exactly.
Sums run over the ranks that occur (N_e > 0); an unseen rank has no geometric mean.

Memory is O(V): per rank e the accumulator keeps N_e and Σ log P (float64), never per-token data.
"""

from __future__ import annotations

import torch

from trainables.metrics.distributed import all_reduce_tensor, distributed_active, sum_across_ranks
from trainables.metrics.shift import shift_for_next_token

# Rows of logits upcast to float64 at once: bounds the temporary to ~128 MiB whatever V is.
_UPCAST_ELEMENTS = 1 << 24


@torch.no_grad()
def ranked_tokens(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per scored token (logits (N, V), targets (N,)): its rank error, the number of vocabulary
    entries whose logit is strictly above the correct token's (N,) int64, and log P of the
    correct token (N,) float64. Upcasts a bounded number of rows at a time."""
    chunk = max(1, _UPCAST_ELEMENTS // max(1, logits.shape[-1]))
    ranks, log_ps = [], []
    for start in range(0, targets.numel(), chunk):
        rows = logits[start : start + chunk]  # (n, V)
        target = targets[start : start + chunk, None]  # (n, 1)
        correct = rows.gather(1, target)  # (n, 1)
        # The rank is read in the input dtype: the model's own ordering, ties included.
        ranks.append((rows > correct).sum(dim=1))  # (n,)
        rows64 = rows.double()
        log_ps.append(rows64.gather(1, target).squeeze(1) - torch.logsumexp(rows64, dim=1))
    if not ranks:
        return torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.float64)
    return torch.cat(ranks), torch.cat(log_ps)


class CEDecomposition:
    """Accumulates the CE decomposition over an evaluation set.

    `update(logits (B, T, V), labels (B, T))` uses the Hugging Face causal-LM convention: the
    logits at position t predict label t+1 (the shift happens here) and label −100 is ignored.
    The vocabulary size is taken from the first update (or `vocab_size`); later updates must match.
    """

    def __init__(self, vocab_size: int | None = None) -> None:
        if vocab_size is not None and vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        self.vocab_size = vocab_size
        # (2, V) float64: row 0 = N_e (token count at rank error e), row 1 = Σ log P over them.
        self._sums: torch.Tensor | None = None

    def _accumulator(self, device: torch.device) -> torch.Tensor:
        if self._sums is None:
            assert self.vocab_size is not None
            # MPS has no float64; keep the sums on the CPU there.
            keep = device if device.type in ("cpu", "cuda") else torch.device("cpu")
            self._sums = torch.zeros(2, self.vocab_size, dtype=torch.float64, device=keep)
        return self._sums

    @torch.no_grad()
    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        logits, targets = shift_for_next_token(logits, labels)  # (B, T−1, V), (B, T−1)
        vocab = logits.shape[-1]
        if self.vocab_size is None:
            self.vocab_size = vocab
        elif vocab != self.vocab_size:
            raise ValueError(
                f"logits have vocabulary size {vocab}, but this CEDecomposition has "
                f"{self.vocab_size} (from its first update)"
            )
        mask = targets != -100
        flat_logits = logits[mask]  # (N, V), input dtype
        flat_targets = targets[mask]  # (N,)
        if flat_targets.numel() and (
            int(flat_targets.min()) < 0 or int(flat_targets.max()) >= vocab
        ):
            raise ValueError(
                f"labels must be -100 or in [0, {vocab}); got values in "
                f"[{int(flat_targets.min())}, {int(flat_targets.max())}]"
            )
        self.add_ranked(*ranked_tokens(flat_logits, flat_targets))

    @torch.no_grad()
    def add_ranked(self, rank_error: torch.Tensor, log_p: torch.Tensor) -> None:
        """Add scored tokens given as their rank errors (N,) and log P of the correct token
        (N,), as `ranked_tokens` returns them: what `update` adds for its logits. Lets a caller
        keep the per-token pairs and decompose any subset of them (e.g. the first n tokens)."""
        if self.vocab_size is None:
            raise ValueError("add_ranked needs the vocabulary size: give vocab_size")
        if rank_error.numel() and int(rank_error.max()) >= self.vocab_size:
            raise ValueError(
                f"rank error {int(rank_error.max())} is not below the vocabulary size "
                f"{self.vocab_size}"
            )
        sums = self._accumulator(log_p.device)
        log_p = log_p.to(sums.device, torch.float64)
        rank_error = rank_error.to(sums.device, torch.int64)
        sums[0].index_add_(0, rank_error, torch.ones_like(log_p))
        sums[1].index_add_(0, rank_error, log_p)

    def all_reduce(self) -> None:
        """Sum the accumulators over torch.distributed ranks when it is initialised; a no-op
        otherwise. Every rank must call it (a rank that saw no tokens takes part with zeros).
        It replaces the local sums with the global ones, so call it once, after the last
        update."""
        if not distributed_active():
            return
        # Agree on the vocabulary size first: ranks without updates do not know it, and ranks
        # that disagree must all raise rather than hang in a mismatched collective.
        own = self.vocab_size or 0
        sizes = torch.tensor([own, -own if own else -(2**62)], dtype=torch.int64)
        largest, neg_smallest = all_reduce_tensor(sizes, torch.distributed.ReduceOp.MAX).tolist()
        if largest == 0:
            return  # no rank has seen any logits
        if -neg_smallest != largest:
            raise ValueError(
                f"ranks disagree on the vocabulary size (between {-neg_smallest} and {largest})"
            )
        self.vocab_size = largest
        sums = self._accumulator(torch.device("cpu"))
        self._sums = sum_across_ranks(sums)

    def state(self) -> torch.Tensor | None:
        """The (2, V) float64 accumulators (token counts, Σ log P per rank error), or None."""
        return self._sums

    def compute(self) -> dict[str, float]:
        """ce, error_entropy, self_alignment, log_confidence (nats per token) and n_tokens.
        With no tokens seen every value but n_tokens is NaN."""
        nan = float("nan")
        if self._sums is None or float(self._sums[0].sum()) == 0:
            return {
                "ce": nan,
                "error_entropy": nan,
                "self_alignment": nan,
                "log_confidence": nan,
                "n_tokens": 0.0,
            }
        counts, log_p_sums = self._sums.double().cpu()
        seen = counts > 0
        counts, log_p_sums = counts[seen], log_p_sums[seen]  # (E,) over the ranks that occur
        n = counts.sum()
        p = counts / n  # p_e
        log_q_big = log_p_sums / counts  # log Q_e
        log_c = torch.logsumexp(log_q_big, dim=0)  # log C
        log_q = log_q_big - log_c  # log q_e
        log_p = torch.log(p)
        error_entropy = -(p * log_p).sum()
        self_alignment = (p * (log_p - log_q)).sum()
        ce = -log_p_sums.sum() / n
        return {
            "ce": float(ce),
            "error_entropy": float(error_entropy),
            "self_alignment": float(self_alignment),
            "log_confidence": float(log_c),
            "n_tokens": float(n),
        }
