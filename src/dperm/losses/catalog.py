"""The losses a model config can name (``loss: logistic``), and label-form conversion.

Kept apart from the package's ``__init__`` so that a loss built *from* another loss (the tilted
risk of :mod:`.tilted`) can resolve a base loss by name without importing the package it belongs
to.
"""

from __future__ import annotations

import numpy as np

from .glm import LABEL_FORMS
from .logistic import Logistic
from .margin import Hinge, HuberHinge
from .mlp import MLP
from .regression import Huber, Squared

#: name → class; ``get_loss(name, **params)`` builds an instance.
LOSSES = {
    "logistic": Logistic,
    "hinge": Hinge,
    "huber-hinge": HuberHinge,
    "huber": Huber,
    "squared": Squared,
    "mlp": MLP,
}


def get_loss(name: str, **params):
    """Instantiate the loss registered as ``name`` (e.g. ``get_loss("huber-hinge", h=0.5)``)."""
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; known: {sorted(LOSSES)}") from None
    return cls(**params)


def label_form(name: str, **params) -> str:
    """Label form ("01", "pm1" or "real") the loss ``name`` expects with these parameters."""
    return get_loss(name, **params).labels


def to_label_form(y, form: str) -> np.ndarray:
    """Convert binary labels given as {0,1} or {−1,+1} to ``form`` ("01" or "pm1"); "real" copies."""
    y = np.asarray(y, dtype=float)
    if form == "real":
        return y.copy()
    if form not in LABEL_FORMS:
        raise ValueError(f"unknown label form {form!r}; expected one of {LABEL_FORMS}")
    values = set(np.unique(y).tolist())
    if not values <= {0.0, 1.0} and not values <= {-1.0, 1.0}:
        raise ValueError(f"labels are not binary in {{0,1}} or {{-1,+1}}: {sorted(values)[:5]}")
    positive = y > 0
    return positive.astype(float) if form == "01" else np.where(positive, 1.0, -1.0)
