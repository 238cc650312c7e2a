"""Public step counts that grow with the budget: T = max(round(n·ε/c), 1).

The DP-AGD authors' baselines fix the number of iterations from the data size and the target ε
(PrivGene c = 800, SGD-Adv c = 500); n here is the public row count (docs/privacy.md#public-n), so
the count costs no privacy. The reference code is Python 2, whose ``round`` sends halves away
from zero: :func:`round_half_up` keeps that, so our counts are the published ones.
"""

from __future__ import annotations

import math


def round_half_up(x: float) -> int:
    """Python 2's round(): halves go away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def steps_for_budget(n: int, epsilon: float, c: float) -> int:
    """T = max(round(n·ε/c), 1), halves rounded up (the DP-AGD code's ``run_privgene_*`` and
    ``run_sgdadv_*``)."""
    return max(round_half_up(n * epsilon / c), 1)
