"""NonPrivate: the exact minimiser of the model's regularised training objective (L-BFGS).

F(w) = (1/n) Σ ℓ_i(w) + (λ/2)‖w‖², solved with scipy's L-BFGS-B to ‖∇F‖ ≤ ``gtol`` and certified
(:func:`dperm.solvers.lbfgs`). Lee & Kifer 2018 §6 use it as the non-private reference line. For
the non-smooth hinge, L-BFGS-B with a subgradient is what the reference code does, stopped by
the relative decrease of F (``nonsmooth_ftol``, scipy's default, which the reference code ran
with); its answer is then a good point, not a certified optimum. Without a regulariser (λ = 0)
the minimiser may not exist (the logistic loss on separable rows: F decreases forever along a
separating direction); a run whose iterates' norm more than doubles over ``RUNAWAY_WINDOW``
iterations while its best gradient norm does not halve is stopped there, noted as not converged,
instead of spending the whole ``max_iter`` budget (KDDCup99's λ = 0 tuning fit: 5,000 iterations,
about 100 s per fold). Not private: adjacency "none", ε = inf.
Deterministic, so every draw is the same point (computed once).
"""

from __future__ import annotations

import math

import numpy as np

from .. import solvers
from .base import FitResult, Privacy
from .domains import POSITIVE, POSITIVE_INT
from .registry import register

RUNAWAY_WINDOW = 500  # iterations without progress (and with the iterates' norm doubling) before stopping


@register("nonprivate",
          domains={"gtol": POSITIVE, "max_iter": POSITIVE_INT, "nonsmooth_ftol": POSITIVE},
          private=False, depends_on_epsilon=False,
          description="L-BFGS on the regularised objective (non-private reference)")
def fit_nonprivate(problem, privacy: Privacy, rng, draws: int = 1, *, gtol: float = 1e-8,
                   max_iter: int = 5_000, nonsmooth_ftol: float = 2.220446049250313e-09):
    smooth = getattr(problem.loss, "smooth", False)
    # Without a regulariser (λ = 0) a minimiser may not exist (separable rows): stop once the
    # iterates run away without the gradient norm improving (solvers.lbfgs, ``stall``) rather
    # than spend the whole budget; a run that converges never meets that test.
    result = solvers.lbfgs(problem, np.zeros(problem.p), gtol=gtol, max_iter=max_iter,
                           ftol=0.0 if smooth else nonsmooth_ftol,
                           stall=RUNAWAY_WINDOW if smooth and problem.l2 == 0 else None)
    notes = [] if result.success or not smooth else [f"L-BFGS stopped above gtol: {result.message}"]
    return FitResult(weights=np.tile(result.x, (draws, 1)), epsilon_spent=math.inf, delta_spent=0.0,
                     adjacency="none", accounting="none (not private)", grad_evals=float(result.n_grad_evals),
                     iterations=int(result.nit),
                     notes=notes, extra={"grad_norm": float(result.grad_norm)})
