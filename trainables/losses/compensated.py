"""`compensated`: cross-entropy plus lam · log C from the cross-entropy decomposition.

The decomposition ("What Scales in Cross-Entropy Scaling Law?", 2025) groups the batch's
tokens by their rank-based error e (the number of vocabulary tokens scored strictly above the
target). With p_e the share of tokens in group e and Q_e the geometric mean of the target
probability over the group, C = Σ_e Q_e and q_e = Q_e / C:
    CE = error_entropy + self_alignment − log C,
with error_entropy = −Σ p_e log p_e and self_alignment = KL(p ‖ q). The loss is
CE + lam · log C: the gradient flows through each Q_e; the ranks are computed without one.

Under a `normalizer` the CE term is exact over the global batch; C is nonlinear in the batch,
so each batch adds lam · (its tokens / global tokens) · its own log C, i.e. the token-weighted
mean of the per-batch log C. The parts log_confidence, error_entropy and self_alignment are
weighted the same way, so each part summed over micro-batches and ranks is that token-weighted
mean (without a normalizer: this batch's own values).
"""

from __future__ import annotations

import torch
from pydantic import Field

from trainables.losses.contract import Batch, LossOutput, TokenLoss
from trainables.losses.cross_entropy import token_nll
from trainables.losses.params import LossParams

# Rows per chunk when counting the tokens ranked above the target: the (rows, V) comparison
# and its count are temporaries of up to about 2**26 elements, whatever the vocabulary.
_RANK_CHUNK_ELEMENTS = 1 << 26


@torch.no_grad()
def rank_based_error(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Number of vocabulary tokens scored strictly above the target, per row.

    logits (N, V); targets (N,) long, already clamped to valid ids. Returns (N,) long.
    """
    n_rows, vocab_size = logits.shape
    target_logit = logits.gather(1, targets.unsqueeze(1))  # (N, 1)
    chunk = max(1, _RANK_CHUNK_ELEMENTS // max(vocab_size, 1))
    if chunk >= n_rows:
        return (logits > target_logit).sum(1)
    return torch.cat(
        [
            (logits[start : start + chunk] > target_logit[start : start + chunk]).sum(1)
            for start in range(0, n_rows, chunk)
        ]
    )


class CompensatedParams(LossParams):
    lam: float = Field(0.5, gt=0, lt=1)
    """weight λ of log C"""


class CompensatedLoss(TokenLoss):
    name = "compensated"
    Params = CompensatedParams
    parts = ("ce", "log_confidence", "error_entropy", "self_alignment")
    auxiliary = True
    definition = "CE + λ·log C from the CE decomposition of the batch"

    def forward(self, batch: Batch) -> LossOutput:
        lam = float(self.params.lam)
        targets = batch.flat_targets.clamp_min(0)  # (N,)
        nll, _ = token_nll(batch.logits, batch.flat_targets)  # (N,), 0 at ignored rows
        ranks = rank_based_error(batch.logits, targets)  # (N,) in [0, V)
        vocab_size = batch.logits.shape[-1]
        weight = batch.valid.to(batch.dtype)  # (N,)
        # Per rank e: token count and summed nll, in (V,) bins (no host sync, no unique()).
        count = torch.zeros(vocab_size, dtype=batch.dtype, device=nll.device)
        count.index_add_(0, ranks, weight)
        nll_sum = torch.zeros(vocab_size, dtype=batch.dtype, device=nll.device)
        nll_sum = nll_sum.index_add(0, ranks, nll * weight)
        occupied = count > 0  # (V,)
        log_q_group = -nll_sum / count.clamp_min(1)  # (V,) log Q_e; clamp keeps empty bins finite
        minus_inf = torch.full((), float("-inf"), dtype=batch.dtype, device=nll.device)
        # An all-ignored batch has no group: give it log C = 0 through one neutral bin.
        empty_batch = ~occupied.any()
        first_bin = torch.arange(vocab_size, device=nll.device) == 0
        log_terms = torch.where(occupied, log_q_group, minus_inf)
        log_terms = torch.where(first_bin & empty_batch, torch.zeros_like(log_terms), log_terms)
        log_c = torch.logsumexp(log_terms, dim=0)  # log Σ_e Q_e

        ce = nll.sum() / batch.token_denominator
        # token-weighted share of this batch in the global batch (1 without a normalizer)
        share = batch.n_tokens.to(batch.dtype) / batch.token_denominator
        aux_term = lam * share * log_c

        with torch.no_grad():
            n = count.sum().clamp_min(1)
            p = count / n  # (V,) p_e
            log_p = torch.where(occupied, p, torch.ones_like(p)).log()  # 0 at empty bins
            log_q = log_terms - log_c  # (V,) log q_e = log Q_e − log C
            error_entropy = -(p * log_p).sum()
            self_alignment = torch.where(occupied, p * (log_p - log_q), torch.zeros_like(p)).sum()
        share = share.detach()
        parts = {
            "ce": ce.detach(),
            "log_confidence": share * log_c.detach(),
            "error_entropy": share * error_entropy,
            "self_alignment": share * self_alignment,
        }
        return LossOutput(
            loss=ce + aux_term, parts=parts, n_tokens=batch.n_tokens, aux_term=aux_term
        )
