"""Array facts shared by the losses and the problem (here, below both, so neither imports the other)."""

from __future__ import annotations

import numpy as np


def read_only(a: np.ndarray) -> bool:
    """Whether neither ``a`` nor any array it views can be written (so its bytes cannot change)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return True
