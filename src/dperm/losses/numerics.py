"""Stable elementwise kernels of the logistic family, written as in-place ufunc chains.

``np.logaddexp(0, z)`` costs about 23 ns per element here; the chains below cost 3–6 ns
(``benchmarks/core.py`` prints the figures), which keeps a full logistic loss+gradient within
about 10% of the two matrix-vector products it needs. Every kernel works on the last axis, so
``z`` may be ``(n,)`` or ``(draws, n)``. Labels enter as t ∈ {0,1} (the target) and
s = 1 − 2t ∈ {±1}, both broadcasting against ``z`` (see :func:`logistic_targets`).

Kernels return ``out`` when given and a fresh array otherwise; their internal temporaries live
in per-thread scratch buffers (:func:`scratch`), never in what they return.
"""

from __future__ import annotations

import math
import threading

import numpy as np

# 64 factors in [1, 2] multiply to at most 2**64 (no overflow) and keep a relative rounding
# error below 64·2⁻⁵³, so one log per 64 elements replaces 64 calls of log1p.
_CHUNK = 64
_SCRATCH = threading.local()
_SCRATCH_MAX = 1 << 23  # elements; beyond 64 MB a temporary is allocated per call instead


def scratch(name: str, shape: tuple) -> np.ndarray:
    """Uninitialised float64 buffer ``name`` of ``shape``, reused across calls in this thread.

    A fresh multi-megabyte temporary is page-faulted in on every call: for the logistic kernel
    with 10 draws of 39,000 scores that cost 3× the arithmetic itself. Reusing a buffer avoids
    it. A scratch buffer must never be returned to a caller (the next call overwrites it).
    """
    size = math.prod(shape)
    if size > _SCRATCH_MAX:
        return np.empty(shape)
    bufs = _SCRATCH.__dict__.setdefault("bufs", {})
    buf = bufs.get(name)
    if buf is None or buf.size < size:
        buf = bufs[name] = np.empty(size)
    return buf[:size].reshape(shape)


def logistic_targets(y: np.ndarray, labels: str):
    """(t, s) = ({0,1} target, 1 − 2t) for labels in form "01" or "pm1" (scratch buffers)."""
    t, s = scratch("t", y.shape), scratch("s", y.shape)
    if labels == "01":
        np.copyto(t, y)
        np.multiply(y, -2.0, out=s)
        s += 1.0
    else:  # ±1: t = (1 + y)/2, s = −y
        np.add(y, 1.0, out=t)
        t *= 0.5
        np.negative(y, out=s)
    return t, s


def sum_log(a: np.ndarray) -> np.ndarray | float:
    """Σ log a_i over the last axis for a_i ∈ [1, 2], taking one log per 64 products.

    Absolute error ≤ about 2⁻⁵³ per element, i.e. the same as summing ``np.log`` elementwise.
    """
    n = a.shape[-1]
    m = n - n % _CHUNK
    # (…, 64, m/64) is a view; reducing over the 64 axis multiplies contiguous rows (SIMD).
    head = a[..., :m].reshape(a.shape[:-1] + (_CHUNK, m // _CHUNK))
    total = np.log(head.prod(axis=-2)).sum(axis=-1)
    if m < n:
        total = total + np.log(a[..., m:]).sum(axis=-1)
    return total


def _twice_margin_part(z, s, absz, out):
    """2·(max(z, 0) − t·z) = |z| + s·z: exact (each term 0 or 2|z|) and ≥ 0 for t ∈ {0,1}."""
    np.multiply(z, s, out=out)
    out += absz
    return out


def softplus(z: np.ndarray, out=None) -> np.ndarray:
    """log(1 + e^z) = max(z, 0) + log1p(e^{−|z|}), finite for every finite z."""
    a = np.abs(z, out=scratch("k.a", z.shape))
    out = np.add(a, z, out=out)
    out *= 0.5  # (|z| + z)/2 = max(z, 0) without rounding
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.log1p(a, out=a)
    out += a
    return out


def logistic_phi(z, t, s, out=None) -> np.ndarray:
    """Per-example log(1 + e^z) − t·z, keeping relative precision for confident examples."""
    a = np.abs(z, out=scratch("k.a", z.shape))
    out = _twice_margin_part(z, s, a, np.empty(z.shape) if out is None else out)
    out *= 0.5
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.log1p(a, out=a)
    out += a
    return out


def logistic_dphi(z, t, out=None) -> np.ndarray:
    """σ(z) − t as 1/(1 + e^{−z}) − t; e^{−z} overflowing to inf yields the correct limit 0.

    ``out`` may be ``z`` itself (in place).
    """
    with np.errstate(over="ignore"):
        e = np.negative(z, out=out)
        np.exp(e, out=e)
    e += 1.0
    np.reciprocal(e, out=e)
    e -= t
    return e


def logistic_d2phi(z, out=None) -> np.ndarray:
    """σ(z)(1 − σ(z)) = e/(1 + e)² with e = e^{−|z|} (the curvature is even in z)."""
    e = np.abs(z, out=out)
    np.negative(e, out=e)
    np.exp(e, out=e)
    d = np.add(e, 1.0, out=scratch("k.d", z.shape))
    d *= d
    e /= d
    return e


def logistic_sum_phi(z, t, s):
    """Σ_i [log(1 + e^{z_i}) − t_i z_i] over the last axis."""
    a = np.abs(z, out=scratch("k.a", z.shape))
    total = 0.5 * _twice_margin_part(z, s, a, scratch("k.m", z.shape)).sum(axis=-1)
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1.0
    return total + sum_log(a)


def logistic_sum_phi_dphi(z, t, s, out=None):
    """(Σ_i [log(1 + e^{z_i}) − t_i z_i] over the last axis, σ(z) − t), sharing one exp.

    ``out`` receives σ(z) − t and must not be ``z`` (its sign is read at the end).
    """
    a = np.abs(z, out=out)
    total = 0.5 * _twice_margin_part(z, s, a, scratch("k.m", z.shape)).sum(axis=-1)
    np.negative(a, out=a)
    np.exp(a, out=a)
    a += 1.0  # 1 + e^{−|z|} ∈ (1, 2]
    total += sum_log(a)
    np.reciprocal(a, out=a)  # σ(|z|)
    # σ(z) = 1/2 + sign(z)·(σ(|z|) − 1/2): one copysign instead of a branch.
    a -= 0.5
    np.copysign(a, z, out=a)
    a += 0.5
    a -= t
    return total, a
