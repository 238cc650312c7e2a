"""Laplacian smoothing of DP-LSSGD (Wang, Gu, Boedihardjo, Barekat & Osher 2019).

For a parameter tensor flattened to length m (row-major), A_σ = I − σ·Δ with Δ the 1-D periodic
discrete Laplacian (−2 on the diagonal, +1 on the two cyclic neighbours). A_σ is circulant with
eigenvalues 1 + 2σ − 2σ·cos(2πk/m), k = 0..m−1 (all ≥ 1), so

    A_σ⁻¹ v = IFFT( FFT(v) / (1 + 2σ − 2σ cos(2πk/m)) ),

computed with the real FFT in O(m log m). σ = 0 is the identity. A tensor of length 1 or 2 is
left unchanged by m = 1 (eigenvalue 1) and smoothed by the 2×2 circulant for m = 2 (its two
neighbours are the same entry, counted twice, as in the DP-LSSGD authors' code).

The operator is applied separately to each parameter tensor of the model, as the authors' code
does per layer: a linear model (logistic regression; the bias column of X is one of its
coordinates) is one tensor of length p; the MLP (:class:`dperm.losses.MLP`) has four, W₁ (h·d,
row-major: row j = weights into hidden unit j), b₁ (h), w₂ (h) and b₂ (1).
"""

from __future__ import annotations

import numpy as np


def eigenvalues(m: int, sigma: float) -> np.ndarray:
    """Eigenvalues of A_σ for k = 0..m//2 (the half spectrum the real FFT uses)."""
    k = np.arange(m // 2 + 1)
    return 1.0 + 2.0 * sigma - 2.0 * sigma * np.cos(2.0 * np.pi * k / m)


def smoothing_matrix(m: int, sigma: float) -> np.ndarray:
    """A_σ itself as a dense (m, m) matrix (for tests and small checks)."""
    A = np.eye(m) * (1.0 + 2.0 * sigma)
    for i in range(m):
        A[i, (i - 1) % m] -= sigma
        A[i, (i + 1) % m] -= sigma
    return A


def smooth(V: np.ndarray, sigma: float) -> np.ndarray:
    """A_σ⁻¹ applied to the last axis of ``V`` (one tensor), through the real FFT."""
    V = np.asarray(V, dtype=float)
    m = V.shape[-1]
    if sigma == 0 or m == 1:
        return V.copy()
    return np.fft.irfft(np.fft.rfft(V, axis=-1) / eigenvalues(m, sigma), n=m, axis=-1)


def parameter_blocks(problem) -> list[slice]:
    """The parameter tensors of ``problem``'s model as slices of the flat parameter vector."""
    from ...losses import MLP

    p = problem.p
    if isinstance(problem.loss, MLP):
        d = problem.X.shape[1]
        h = problem.loss.width(d)
        hd = h * d
        return [slice(0, hd), slice(hd, hd + h), slice(hd + h, hd + 2 * h), slice(hd + 2 * h, p)]
    return [slice(0, p)]


def laplacian_smoother(problem, sigma: float):
    """A map of ``(draws, p)`` arrays applying A_σ⁻¹ to each parameter tensor of ``problem``."""
    blocks = parameter_blocks(problem)
    spectra = {b.stop - b.start: eigenvalues(b.stop - b.start, sigma) for b in blocks}

    def apply(V: np.ndarray) -> np.ndarray:
        out = np.empty_like(V)
        for b in blocks:
            m = b.stop - b.start
            if m == 1:
                out[:, b] = V[:, b]
            else:
                out[:, b] = np.fft.irfft(np.fft.rfft(V[:, b], axis=-1) / spectra[m], n=m, axis=-1)
        return out

    return apply
