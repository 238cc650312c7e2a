"""Algorithms, each registered by name (see :mod:`.registry`) with the interface of :mod:`.base`.

Adding an algorithm: write a module in this package (or a family folder, as ``dp_agd/``: the
registered algorithm and its privacy argument in the folder's ``__init__``, its theory in a public
module beside it) with a ``@register("name", ...)`` fit function; every module of the package is
found and imported automatically. Privacy math shared by several families (calibrations, noise,
the public row bound, step counts) lives in :mod:`dperm.privacy`.
"""

from .base import AlgorithmSpec, FitResult, Privacy, draw_rngs
from .registry import algorithm_names, get_algorithm, register

__all__ = ["AlgorithmSpec", "FitResult", "Privacy", "algorithm_names", "draw_rngs", "get_algorithm",
           "register"]
