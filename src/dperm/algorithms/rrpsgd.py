"""RRPSGD — Random Round Private SGD (Zhang, Zheng, Mou & Wang, IJCAI 2017, Alg. 2),
for smooth, possibly non-convex objectives.

F(w) = (1/n) Σ ℓ_i(w) + (λ/2)‖w‖², λ = ``problem.l2``. Draw R from P(R = k + 1) ∝ 2η_k − βη_k²,
k = 0..T_max − 1 (uniform on {1..T_max} for the constant η used here); for t < R: draw one row ξ
uniformly, z_t ~ N(0, s²I), w_{t+1} = w_t − η(clip_L(∇ℓ_ξ(w_t)) + λw_t + z_t). Output w_R.
The paper draws R over n² rounds; ``max_steps`` = T_max caps it (n² is 10⁹ here), and the
privacy argument covers any R ≤ T_max ≤ n² because R is drawn independently of the data.

Noise (``noise``):

* ``"theorem4"`` (default, the paper): the density exp(−ε²‖z‖²/(8L² ln(3n/δ) ln(2/δ))) of
  Alg. 2 is a Gaussian with per-coordinate variance s² = 4L² ln(3n/δ) ln(2/δ)/ε², so
  E‖z‖² = d·s², which is what Theorem 5's σ² = 4L² + 4dL² ln(3n/δ) ln(2/δ)/ε² uses; the proof
  sketch's 8L²(…) without d is the inconsistent one (docs/deviations.md#zhang-typos) — we follow the
  algorithm's density. Theorem 4 proves (ε, δ)-DP (replace-one) only for ε ∈ (0, 1] and ≤ n² rounds,
  so ε > 1 and max_steps > n² raise ``ValueError``. Its proof is not in the paper (it defers to a
  full version); as a check, the RDP accountant for the analogous Poisson-sampled Gaussian (rate
  1/n, n² steps, add/remove) certifies ε ≈ 0.1–0.2 at the ε = 1 noise level for n ≈ 5,000–45,000 — a
  wide margin.
* ``"calibrated"``: our own calibration for the steps that can actually run, valid for every ε:
  advanced composition over T_max steps, amplification by sampling one row (q = 1/n) and the
  valid-for-all-ε Gaussian (:func:`dperm.algorithms.bassily.noisy_sgd_calibration` with m = 1;
  ``gaussian`` = "zhao" or "analytic"). With T_max ≪ n² it adds far less noise than Theorem 4.

Lipschitz constant L: rows are mapped to ‖x‖ ≤ ``row_bound`` (public, default 1), L = the loss's
constant there; per-example gradients are clipped to L, which makes the sensitivity (2L, replace-
one) true whatever the loss. The MLP has no global Lipschitz constant: pass ``clip`` = L and the
gradients are clipped to it (the privacy argument then holds exactly; L is a choice, not a
property of the network). The regulariser is data-independent and not clipped
(docs/privacy.md#outpert-regulariser).

Step size (Theorem 5 with N = T_max rounds in place of n²): η = min(1/β, D_F/(σ_tot·√N)),
σ_tot² = 4L² + d·s² (Theorem 5's σ², the bound on E‖G − ∇F‖²), β = β_ℓ(R) + λ, and
D_F = √(2(F(w₀) − F*)/β) with a **public** bound F(w₀) − F* ≤ F(w₀) ≤ B₀
(docs/privacy.md#data-dependent-choices; F* ≥ 0 because losses and regulariser are ≥ 0). B₀ must not
depend on the data: for a linear model at w₀ = 0 every row has score 0, so ℓ_i(w₀) = φ(0, y_i) takes
one value per label — B₀ = the largest over the label set (ln 2 for logistic: the same for every
row; 1 for the hinges; Huber: h(1) for targets in [0, 1]). For the MLP at a public random
initialisation, the output o = ⟨w₂, tanh(·)⟩ + b₂ satisfies |o| ≤ ‖w₂‖₁ + |b₂|, so
ℓ_i ≤ log(1 + e^{‖w₂‖₁+|b₂|}). The MLP's β is unknown: ``smoothness`` is then required (it affects
utility, never privacy).
``initial_loss_bound`` and ``smoothness`` override either bound.

Metric: ``extra["grad_norm_sq"]`` = ‖∇F(w_R)‖² of the full regularised objective on the data
as given (Theorem 5 bounds its expectation; ``extra["utility_bound"]`` is that bound:
β(D_F² + σ_tot²Nη²)/(N(2η − βη²))), and ``extra["grad_norm_sq_init"]`` the same at the draw's
public starting point w₀, the reference level.
"""

from __future__ import annotations

import math

import numpy as np

from ..losses import GLMLoss
from ..losses.glm import NotSmoothError
from ..privacy import calibration_faults as faults
from ..privacy.perturbation import enforce_row_bound
from ..privacy.validation import check_real
from .audit_worst_case import white_box_audit
from .base import FitResult, Privacy, draw_rngs
from .bassily import lipschitz_bound, noisy_sgd_calibration
from .domains import POSITIVE, POSITIVE_INT, finite_epsilon, one_of, optional, positive_delta
from .registry import register

NOISES = ("theorem4", "calibrated")


def theorem4_noise_std(epsilon: float, delta: float, n: int, lipschitz: float) -> float:
    """s = 2L√(ln(3n/δ) ln(2/δ))/ε per coordinate (Alg. 2's density); ε must be in (0, 1]."""
    if not 0 < epsilon <= 1:
        raise ValueError(f"rrpsgd noise='theorem4' is proven (Theorem 4) only for epsilon in (0, 1]; got "
                         f"epsilon={epsilon!r}; use noise='calibrated' (valid for every epsilon)")
    return 2.0 * lipschitz * math.sqrt(math.log(3.0 * n / delta) * math.log(2.0 / delta)) / epsilon


def round_distribution(eta: np.ndarray, beta: float) -> np.ndarray:
    """P(R = k + 1) ∝ 2η_k − βη_k², k = 0..N−1 (Theorem 5); needs η_k < 2/β."""
    weights = 2.0 * eta - beta * eta * eta
    if not (weights > 0).all():
        raise ValueError(f"every step size must be < 2/beta = {2.0 / beta!r}; got max {eta.max()!r}")
    return weights / weights.sum()


def public_initial_loss_bound(loss, w0: np.ndarray, n_features: int) -> float:
    """A data-independent B₀ ≥ ℓ_i(w₀) for every possible row (module docstring)."""
    if isinstance(loss, GLMLoss):
        if np.any(w0):
            raise ValueError("the public initial-loss bound for linear models needs w0 = 0")
        labels = {"01": [0.0, 1.0], "pm1": [-1.0, 1.0], "real": [0.0, 1.0]}[loss.labels]
        # φ(0, y) for each label value; for real targets in [0, 1] a convex loss of the residual
        # −y is largest at an end point
        return float(np.max(loss.phi(np.zeros(len(labels)), np.asarray(labels))))
    if getattr(loss, "name", "") == "mlp":
        h = loss.width(n_features)
        hd = h * n_features
        out_bound = np.abs(w0[hd + h: hd + 2 * h]).sum() + abs(w0[-1])
        return float(np.logaddexp(0.0, out_bound))
    raise ValueError(f"no public initial-loss bound is known for loss {loss!r}; pass initial_loss_bound=")


def _example_gradient(problem, L: float):
    """g(w, i) = clip_L(∇ℓ_i(w)) for one row. Linear models take a short path (one dot product
    and one scalar derivative: a single-row call of ``clipped_grad_sum`` is all overhead)."""
    loss, X, y, norms = problem.loss, problem.X, problem.y, problem.row_norms
    if not isinstance(loss, GLMLoss):
        return lambda w, i: problem.clipped_grad_sum(w, L, np.array([i]))

    def grad(w, i):
        d = float(loss.dphi(X[i:i + 1] @ w, y[i:i + 1])[0])
        size = abs(d) * norms[i]
        return X[i] * (d if size <= L else d * L / size)

    return grad


_LIMIT = ("Theorem 4's noise covers n^2 rounds (s = 2L sqrt(ln(3n/delta) ln(2/delta))/epsilon per coordinate); "
          "one round at half of it is still 0.49-DP at delta = 1e-5 even if the differing row were sampled surely, so "
          "no number of runs can catch it")


# White box: one round (max_steps 1: R = 1), the differing row in Huber regression's linear zone.
@register("rrpsgd", audit=white_box_audit("one round, a row pushing at the Lipschitz bound (white box)", "replace-one",
                                         runs=20_000, n=50, hyper={"max_steps": 1}, loss="huber", norm=1.0,
                                         target=1.0, huber_delta=0.1),
          domains={"max_steps": POSITIVE_INT, "noise": one_of(*NOISES), "row_bound": POSITIVE,
                   "clip": optional(POSITIVE), "smoothness": optional(POSITIVE),
                   "initial_loss_bound": optional(POSITIVE), "gaussian": one_of("zhao", "analytic"),
                   "chunk": POSITIVE_INT},
          needs=(finite_epsilon, positive_delta),
          audit_limits={"half noise": _LIMIT, "sensitivity halved": _LIMIT},
          description="Random Round Private SGD (Zhang et al. 2017, Alg. 2), non-convex")
def fit_rrpsgd(problem, privacy: Privacy, rng, draws: int = 1, *, max_steps: int = 100_000,
               noise: str = "theorem4", row_bound: float = 1.0, clip: float | None = None,
               smoothness: float | None = None, initial_loss_bound: float | None = None,
               gaussian: str = "zhao", chunk: int = 1024):
    if not privacy.is_private or not privacy.delta > 0:
        raise ValueError(f"rrpsgd needs a finite epsilon and delta > 0; got epsilon={privacy.epsilon!r}, "
                         f"delta={privacy.delta!r}")
    eps, delta = float(privacy.epsilon), float(privacy.delta)
    n, p, lam = problem.n, problem.p, problem.l2
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}; got noise={noise!r}")
    if not (isinstance(max_steps, (int, np.integer)) and max_steps >= 1):
        raise ValueError(f"max_steps must be a positive integer; got max_steps={max_steps!r}")
    N = int(max_steps)
    if noise == "theorem4" and N > n * n:
        raise ValueError(f"Theorem 4 covers at most n^2 = {n * n} rounds; got max_steps={max_steps!r}")
    bounded = enforce_row_bound(problem, row_bound)
    L = lipschitz_bound(bounded, row_bound, None, clip, "rrpsgd")
    if smoothness is None:
        try:
            beta = float(bounded.loss.smoothness(row_bound)) + lam
        except (NotImplementedError, NotSmoothError) as err:
            raise ValueError(f"rrpsgd needs a smoothness constant for loss {problem.loss!r} ({err}); "
                             "pass smoothness=beta (or use a smooth loss such as 'huber-hinge')") from None
    else:
        beta = float(check_real(smoothness, "smoothness", low=0.0))
    if noise == "theorem4":
        s = theorem4_noise_std(eps, delta, n, L)
        cal = {}
    else:
        cal = noisy_sgd_calibration(eps, delta, n, 1, N, L, gaussian=gaussian)
        s = cal["sigma"]
    sigma_tot = math.sqrt(4.0 * L * L + p * s * s)

    notes, d_features = [], problem.X.shape[1]
    example_grad = _example_gradient(bounded, L)
    weights, inits = np.zeros((draws, p)), np.zeros((draws, p))
    rounds = np.zeros(draws, dtype=np.int64)
    info = []
    for d, child in enumerate(draw_rngs(rng, draws)):
        init = getattr(problem.loss, "init", None)
        w = init(child, d_features) if init is not None else np.zeros(p)  # public randomness
        inits[d] = w
        if initial_loss_bound is None:
            B0 = public_initial_loss_bound(problem.loss, w, d_features) + 0.5 * lam * float(w @ w)
        else:
            B0 = float(check_real(initial_loss_bound, "initial_loss_bound", low=0.0, low_open=False))
        DF = math.sqrt(2.0 * B0 / beta)
        eta = min(1.0 / beta, DF / (sigma_tot * math.sqrt(N))) if DF > 0 else 1.0 / beta
        # constant η: P(R = k + 1) ∝ 2η − βη² is uniform on {1..N}
        R = int(child.integers(1, N + 1))
        for t in range(R):
            if t % chunk == 0:
                size = min(chunk, R - t)
                rows = child.integers(n, size=size)
                z = child.normal(0.0, faults.noise_scale(s), size=(size, p))
            g = example_grad(w, rows[t % chunk])
            g += z[t % chunk]
            if lam:
                g += lam * w
            w -= eta * g
        weights[d], rounds[d] = w, R
        info.append((B0, DF, eta))
    # identical across draws for linear models (w₀ = 0); per draw for the MLP's random w₀
    B0, DF, eta = (np.array(col) if len(set(col)) > 1 else col[0] for col in zip(*info))
    grad, grad_init = problem.grad(weights), problem.grad(inits)
    bound = beta * (DF ** 2 + sigma_tot ** 2 * N * eta ** 2) / (N * (2.0 * eta - beta * eta ** 2))
    return FitResult(
        weights=weights, epsilon_spent=eps, delta_spent=delta, adjacency="replace-one",
        accounting="Zhang et al. 2017, Theorem 4" if noise == "theorem4" else
        "advanced composition, amplification by sampling one row, Gaussian valid for every epsilon",
        grad_evals=float(rounds.mean()) / n, iterations=rounds, notes=notes,
        extra=dict(cal, grad_norm_sq=np.einsum("ij,ij->i", grad, grad),
                   grad_norm_sq_init=np.einsum("ij,ij->i", grad_init, grad_init), rounds=rounds, max_steps=N,
                   noise=noise, noise_std=s, sigma_total=sigma_tot, lipschitz=L, smoothness=beta,
                   row_bound=float(row_bound), initial_loss_bound=B0, D_F=DF, learning_rate=eta,
                   utility_bound=bound, steps_paper=n * n))

