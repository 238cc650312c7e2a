"""Sensitivity, schedules and noise of output-perturbed gradient descent (Zhang et al. 2017).

Notation (Zhang et al. 2017, §3.1): f(w; ξ_i) = ℓ_i(w) + (μ/2)‖w‖² is the per-example
*regularised* loss (the paper's footnote 5 adds the μ-term to each f to make it strongly convex),
so its smoothness is β = β_ℓ(R) + μ; L is the Lipschitz constant of the *unregularised* ℓ_i
(below, and docs/privacy.md#outpert-regulariser). Adjacency: replace-one (Zhang et al. 2017,
§2.2: |S| = |S'| = n, one data point differs).

**Lemma 2** (convex, β-smooth, η ≤ 1/β): Δ_T ≤ 3LTη/n.
**Lemma 3** (μ-strongly convex, β-smooth, η ≤ 1/(β + μ)): Δ_T ≤ 5L(μ + β)/(nμβ)
(Theorem 2 writes it 5L(1 + β/μ)/(nβ), the same number).

Check of the constants (our derivation, after Hardt, Recht & Singer 2016, Lemmas 3.6–3.7). Let
S, S' differ in row k and split F_S = g + (1/n)ℓ_k with g = (1/n)Σ_{i≠k} ℓ_i + (μ/2)‖·‖², common
to both. The GD map of g is non-expansive for η ≤ 2/β_g (convex) and (1 − ημ)-contractive for
η ≤ 2/(β_g + μ) (write g = h + (μ/2)‖·‖² with h convex, (β_g − μ)-smooth), β_g ≤ β. The rest
moves the iterate by (η/n)‖∇ℓ_k(w_t) − ∇ℓ'_k(w'_t)‖ ≤ 2ηL/n. Hence
Δ_{t+1} ≤ (1 − ημ)Δ_t + 2ηL/n, i.e. Δ_T ≤ 2LTη/n (μ = 0) and Δ_T ≤ (2L/(nμ))(1 − (1 − ημ)^T)
(μ > 0). Both lemmas are therefore valid and conservative (factors 3/2 and ≥ 5/2), under
conditions weaker than the paper's. The regulariser cancels in the difference, which is why L is
the Lipschitz constant of ℓ, not of f (f's is unbounded on R^p;
docs/privacy.md#outpert-regulariser). The paper's recursion
Δ²_{t+1} ≤ Δ²_t + 4ηLΔ_t/n + 8η²L²/n² gives 3LTη/n by induction (c = 3 satisfies c² ≥ 8 and
2c² ≥ 4c).

**Theorem 2** (μ > 0): η = 1/(μ + β), T = ⌈((μ² + β²)/(μβ))·ln(μ²n²ε²D²/(L²·d²))⌉.
**Theorem 3** (μ = 0): η = 1/β, T = ⌈(β²n²ε²D²/(L²·d²))^{1/3}⌉.
For (ε, δ)-DP, d² → d·ln(1/δ). Θ-constants = 1 and D is a declared bound on ‖ŵ‖
(docs/deviations.md#zhang-unknowns); T ≥ 1 is enforced. T and η are data-independent, so they
cost no privacy; a wrong D costs utility only.

**Noise** (Algorithm 1): δ = 0: density ∝ exp(−ε‖z‖/Δ) (Gamma-norm sampler); δ > 0: Gaussian.
The paper's Gaussian σ = Δ√(2 ln(2/δ))/ε holds for ε ≤ 1 only; the paper (ε = 2) and DP-AGD's
baseline (ε = 1.6) use it beyond (docs/privacy.md#gaussian-range). ``gaussian="auto"`` uses it
for ε ≤ 1 and the valid-for-all-ε Zhao et al. calibration above, with a note in the result.
"""

from __future__ import annotations

import math

from ...privacy.perturbation import GAUSSIANS, noise_calibration  # noqa: F401  (re-exported: the paper's noise)

LEMMAS = ("auto", "convex", "strongly-convex", "best")


def lemma2_sensitivity(L: float, steps: int, eta: float, n: int) -> float:
    """Zhang et al. Lemma 2: Δ_T ≤ 3LTη/n (convex, β-smooth, η ≤ 1/β; replace-one)."""
    return 3.0 * L * steps * eta / n


def lemma3_sensitivity(L: float, mu: float, beta: float, n: int) -> float:
    """Zhang et al. Lemma 3: Δ_T ≤ 5L(μ + β)/(nμβ) (μ-strongly convex, η ≤ 1/(β + μ))."""
    return 5.0 * L * (mu + beta) / (n * mu * beta)


def _dimension_term(d: int, delta: float) -> float:
    """d² for ε-DP, d·ln(1/δ) for (ε, δ)-DP (Theorems 2 and 3)."""
    return float(d) ** 2 if delta == 0 else d * math.log(1.0 / delta)


def theorem2_schedule(*, mu, beta, L, n, epsilon, delta, D, d) -> tuple[int, float]:
    """(T, η) of Zhang et al. Theorem 2 (μ > 0), Θ-constant 1, T ≥ 1."""
    ratio = (mu * n * epsilon * D) ** 2 / (L**2 * _dimension_term(d, delta))
    T = math.ceil((mu**2 + beta**2) / (mu * beta) * math.log(ratio))
    return max(1, T), 1.0 / (mu + beta)


def theorem3_schedule(*, beta, L, n, epsilon, delta, D, d) -> tuple[int, float]:
    """(T, η) of Zhang et al. Theorem 3 (μ = 0), Θ-constant 1, T ≥ 1."""
    ratio = (beta * n * epsilon * D) ** 2 / (L**2 * _dimension_term(d, delta))
    return max(1, math.ceil(ratio ** (1.0 / 3.0))), 1.0 / beta


def step_limit(lemma: str, mu: float, beta: float) -> float:
    """Largest η the lemma allows: 1/β (Lemma 2, also for "best") or 1/(β + μ) (Lemma 3)."""
    return 1.0 / (beta + mu) if lemma == "strongly-convex" else 1.0 / beta


def resolve_lemma(lemma: str, mu: float) -> str:
    """The lemma to use: "auto" is the paper's pairing (μ > 0 → Lemma 3, μ = 0 → Lemma 2)."""
    if lemma not in LEMMAS:
        raise ValueError(f"lemma must be one of {LEMMAS}; got lemma={lemma!r}")
    if lemma == "auto":
        return "strongly-convex" if mu > 0 else "convex"
    if lemma == "strongly-convex" and mu <= 0:
        raise ValueError("lemma='strongly-convex' (Lemma 3) needs mu = l2 > 0; got l2=0")
    return lemma


def gd_sensitivity(*, lemma, L, mu, beta, n, steps, eta) -> tuple[float, str]:
    """(Δ, lemma used) for T = ``steps`` GD steps of size η ≤ ``step_limit(lemma, μ, β)``.

    ``lemma`` is resolved ("convex", "strongly-convex" or "best"); "best" takes the smaller of
    the bounds whose step condition holds (Lemma 3 needs μ > 0 and η ≤ 1/(β + μ)).
    """
    if lemma == "convex":
        return lemma2_sensitivity(L, steps, eta, n), "lemma2"
    if lemma == "strongly-convex":
        return lemma3_sensitivity(L, mu, beta, n), "lemma3"
    bounds = {"lemma2": lemma2_sensitivity(L, steps, eta, n)}
    if mu > 0 and eta <= 1.0 / (beta + mu):
        bounds["lemma3"] = lemma3_sensitivity(L, mu, beta, n)
    used = min(bounds, key=bounds.get)
    return bounds[used], used
