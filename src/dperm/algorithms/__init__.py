"""Algorithms, each registered by name (see :mod:`.registry`) with the interface of :mod:`.base`.

Adding an algorithm: write a module in this package with a ``@register("name", ...)`` fit
function; it is found and imported automatically (modules starting with ``_`` are skipped).
"""

from .base import AlgorithmSpec, FitResult, Privacy, draw_rngs
from .registry import algorithm_names, get_algorithm, register

__all__ = ["AlgorithmSpec", "FitResult", "Privacy", "algorithm_names", "draw_rngs", "get_algorithm",
           "register"]
