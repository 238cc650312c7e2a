"""Loss functions with a uniform value / gradient protocol, vectorised over draws.

Every loss ``L`` offers, for ``w`` of shape ``(p,)`` or ``(draws, p)`` (one row per draw):

* ``L.value(w, X, y)`` → mean loss, float or ``(draws,)``;
* ``L.grad``, ``L.value_and_grad`` → ``(p,)`` or ``(draws, p)`` gradients;
* ``L.per_example_value`` → ``(n,)``/``(draws, n)``; ``L.per_example_grad`` → ``(n, p)``/``(draws, n, p)``;
* ``L.hvp(w, v, X, y)`` → Hessian-vector product, shaped like ``w``;
* ``L.clipped_grad_sum(w, X, y, clip, row_norms=None)`` → Σ_i clip_C(∇ℓ_i(w));
* ``L.lipschitz(R, radius=None)``, ``L.smoothness(R)`` → constants for ‖x‖ ≤ R;
* ``L.predict``, ``L.accuracy`` (classification losses; the DP-AGD code's test rules),
  ``L.check_labels``.

Losses are unregularised; L2 regularisation lives in :class:`dperm.problem.Problem`.
Each loss declares the label form it expects in ``L.labels``: ``"01"``, ``"pm1"`` or ``"real"``;
use :func:`to_label_form` to convert a binary label array.

Two objectives built *from* a model's loss are here too, not in ``LOSSES`` (no model of a config
names them; the algorithms that optimise them build them): :class:`Tilted` (the tilted empirical
risk of a GLM loss, :mod:`.tilted`) and :class:`RobustLogistic` (the logistic loss of the worst
ℓ2-perturbed margin, :mod:`.robust`, with :func:`robust_accuracy`).
"""

from __future__ import annotations

from .catalog import LOSSES, get_loss, label_form, to_label_form
from .glm import LABEL_FORMS, GLMLoss, NotSmoothError, check_label_form, row_norms
from .logistic import Logistic
from .margin import Hinge, HuberHinge
from .mlp import MLP
from .regression import Huber, Squared
from .robust import RobustLogistic, robust_accuracy
from .tilted import Tilted, loss_range

__all__ = [
    "LABEL_FORMS", "LOSSES", "GLMLoss", "Hinge", "Huber", "HuberHinge", "Logistic", "MLP",
    "NotSmoothError", "RobustLogistic", "Squared", "Tilted", "check_label_form", "get_loss", "label_form",
    "loss_range", "robust_accuracy", "row_norms", "to_label_form",
]
