"""The joint form's log residuals r = log(e^e + e^(a − α·log N) + e^(b − β·log D)) − log M, their
Jacobian and the Huber objective, for many parameter vectors at once: what the least-squares fit
(robust_fit.py) and the batched fits (batch_fit.py) both evaluate."""

from __future__ import annotations

import numpy as np


def log_terms(theta: np.ndarray, xn: np.ndarray, xd: np.ndarray):
    """log f and the shares of its three terms for θ (K, 5) at log N, log D (K or 1, P):
    (lse, s0, s1, s2), each (K, P). The log-sum-exp is written out, shifted by its largest
    term (1.8× faster than np.logaddexp.reduce over a stacked array)."""
    e, a, alpha, b, beta = (theta[:, j : j + 1] for j in range(5))
    t1 = a - alpha * xn
    t2 = b - beta * xd
    top = np.maximum(np.maximum(t1, t2), e)
    w0, w1, w2 = np.exp(e - top), np.exp(t1 - top), np.exp(t2 - top)
    total = w0 + w1 + w2
    return top + np.log(total), w0 / total, w1 / total, w2 / total


def residuals_jacobian(
    theta: np.ndarray, xn: np.ndarray, xd: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Log residuals r (K, P) and their Jacobian with respect to θ (K, P, 5)."""
    lse, s0, s1, s2 = log_terms(theta, xn, xd)
    jac = np.stack([s0, s1, -s1 * xn, s2, -s2 * xd], axis=-1)
    return lse - y, jac


def huber_value(r: np.ndarray, delta: float, w: np.ndarray | None = None) -> np.ndarray:
    """Σ w·Huber_δ(r) along the last axis."""
    a = np.abs(r)
    h = np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))
    return np.sum(h if w is None else w * h, axis=-1)
