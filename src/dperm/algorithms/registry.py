"""Algorithms registered under stable names (``dp-agd``, ``dp-agd-reference``, ``dp-sgd``, ...).

A reference variant is its own key (the correct key plus ``-reference``), so results files,
tables and legends can never mix the two.
"""

from __future__ import annotations

from .base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(name: str, **spec):
    """Decorator: register ``fit`` under ``name`` with the :class:`AlgorithmSpec` fields given."""

    def decorate(fit):
        if name in ALGORITHMS:
            raise ValueError(f"algorithm {name!r} is registered twice")
        ALGORITHMS[name] = AlgorithmSpec(name=name, fit=fit, fit_settings=getattr(fit, "fit_settings", None),
                                         **spec)
        return fit

    return decorate


def get_algorithm(name: str) -> AlgorithmSpec:
    _load_all()
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; known algorithms: {', '.join(sorted(ALGORITHMS))}") from None


def algorithm_names() -> list[str]:
    _load_all()
    return sorted(ALGORITHMS)


_INFRASTRUCTURE = {"base", "registry"}


def _load_all() -> None:
    """Import every algorithm module of this package once, so their ``@register`` decorators run."""
    import importlib
    import pkgutil

    package = __name__.rsplit(".", 1)[0]
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not module.name.startswith("_") and module.name not in _INFRASTRUCTURE:
            importlib.import_module(f"{package}.{module.name}")
