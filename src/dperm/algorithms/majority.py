"""Majority: predict the training fold's most frequent label for every test row.

Lee & Kifer 2018 §6 plot it as the trivial baseline. It has no weights worth evaluating, so the
result carries ``extra["constant_prediction"]`` (in the loss's label form) and zero weights;
the protocol scores accuracy from the constant and reports no objective. Not private.
"""

from __future__ import annotations

import math

import numpy as np

from .base import FitResult, Privacy
from .registry import register


@register("majority", private=False, depends_on_epsilon=False,
          description="majority label of the training fold (trivial baseline)")
def fit_majority(problem, privacy: Privacy, rng, draws: int = 1):
    labels, counts = np.unique(problem.y, return_counts=True)
    # ties go to the larger label, the positive class in either label form
    winner = labels[np.flatnonzero(counts == counts.max())[-1]]
    return FitResult(weights=np.zeros((draws, problem.X.shape[1])), epsilon_spent=math.inf,
                     delta_spent=0.0, adjacency="none", accounting="none (not private)",
                     extra={"constant_prediction": float(winner)})
