"""The compute-optimal allocation of a joint fit L(N, D) = E + A·N^−α + B·D^−β: for a compute
budget C = k·N·D (k = 6 FLOP per parameter and token, or the ratio a FLOP column gives), the
N and D that minimise L, in closed form (derivation: docs/analysis-scaling.md):

    N*(C) = G·(C/k)^a,  D*(C) = G^−1·(C/k)^b,  G = (α·A / (β·B))^(1/(α+β)),
    a = β/(α+β),  b = α/(α+β)  (a + b = 1),

tokens per parameter D*/N* = G^−2·(C/k)^(b−a), and the loss there L(N*, D*). Each comes with a
percentile interval over the joint fit's bootstrap resamples (joint.py): the closed form
applied to every resample's parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.scaling.bootstrap import percentile_ci
from analysis.scaling.joint import JointBootstrap, predict_with

FLOPS_PER_PARAM_TOKEN = 6.0
"""C ≈ 6·N·D: forward and backward pass of a dense transformer (Kaplan et al. 2020)."""


def allocation(
    params: np.ndarray, budgets: np.ndarray, k: float = FLOPS_PER_PARAM_TOKEN
) -> tuple[np.ndarray, np.ndarray]:
    """N* and D* for each row of (E, A, α, B, β) `params` (R, 5) at each budget (K,): (R, K)
    each."""
    _, a_, alpha, b_, beta = (params[:, j : j + 1] for j in range(5))
    g = (alpha * a_ / (beta * b_)) ** (1.0 / (alpha + beta))  # (R, 1)
    nd = np.asarray(budgets, dtype=np.float64)[None, :] / k  # (1, K): N·D
    n_opt = g * nd ** (beta / (alpha + beta))
    return n_opt, nd / n_opt


def exponents(params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a = β/(α+β) and b = α/(α+β) per row of `params` (R, 5): (R,) each."""
    alpha, beta = params[:, 2], params[:, 4]
    return beta / (alpha + beta), alpha / (alpha + beta)


def _point(boot: JointBootstrap) -> np.ndarray:
    f = boot.fit
    return np.array([[f.E, f.A, f.alpha, f.B, f.beta]])


def exponent_record(boot: JointBootstrap, level: float) -> dict:
    """The allocation exponents of the fit with their intervals."""
    a, b = exponents(_point(boot))
    out = {"a_opt": float(a[0]), "b_opt": float(b[0])}
    if boot.draws.shape[0]:
        ab, bb = exponents(boot.draws)
        out["a_opt_ci_low"], out["a_opt_ci_high"] = percentile_ci(ab, level) or (None, None)
        out["b_opt_ci_low"], out["b_opt_ci_high"] = percentile_ci(bb, level) or (None, None)
    else:
        out |= dict.fromkeys(("a_opt_ci_low", "a_opt_ci_high", "b_opt_ci_low", "b_opt_ci_high"))
    return out


def optimal_records(
    boot: JointBootstrap, budgets: Sequence[float], level: float, k: float
) -> list[dict]:
    """Per budget C: N*, D*, tokens per parameter and L(N*, D*), each with its interval."""
    c = np.asarray(budgets, dtype=np.float64)
    found = {}
    for name, params in (("fit", _point(boot)), ("draws", boot.draws)):
        if params.shape[0] == 0:
            continue
        n_opt, d_opt = allocation(params, c, k)
        loss = predict_with(params, n_opt, d_opt)  # (R, K): each row at its own N*, D*
        found[name] = {
            "N_opt": n_opt,
            "D_opt": d_opt,
            "tokens_per_param": d_opt / n_opt,
            "loss_opt": loss,
        }
    out = []
    for i, budget in enumerate(c):
        rec: dict = {"C": float(budget)}
        for q, values in found["fit"].items():
            rec[q] = float(values[0, i])
            ci = percentile_ci(found["draws"][q][:, i], level) if "draws" in found else None
            rec[f"{q}_ci_low"], rec[f"{q}_ci_high"] = ci or (None, None)
        out.append(rec)
    return out


def default_budgets(n: np.ndarray, d: np.ndarray, k: float) -> list[float]:
    """The largest compute in the data and 10× and 100× beyond it, rounded to 2 digits."""
    top = float(np.max(k * n * d))
    return [float(f"{top * f:.2g}") for f in (1, 10, 100)]
