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


def float32_floor(x) -> np.ndarray:
    """x rounded down to float32 (+inf stays +inf): the largest float32 that does not exceed x."""
    x = np.asarray(x, dtype=float)
    f = x.astype(np.float32)
    above = f.astype(float) > x
    f[above] = np.nextafter(f[above], np.float32(-np.inf))
    return f
