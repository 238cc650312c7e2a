"""Algorithms registered under stable names (``dp-agd``, ``dp-agd-reference``, ``dp-sgd``, ...).

:func:`register` decorates an implementation ``impl(problem, privacy, rng, draws=1, *,
<hyper-parameters with the paper's defaults>, <switches>)``. Its keyword-only parameters are
the algorithm's hyper-parameters, except those named in ``switches``: implementation choices
that configuration must not reach (which semantics a run follows), fixed by the registration.

A reference variant is declared once against its base (:func:`register_variant`): the base's
implementation with other switches, and only the defaults that differ; nothing is restated. It
is its own key (``-reference``), so results files, tables and legends never mix the two.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .base import AlgorithmSpec

ALGORITHMS: dict[str, AlgorithmSpec] = {}


def _keywords(impl: Callable) -> dict[str, Any]:
    """Keyword-only parameters of ``impl`` -> default (``inspect.Parameter.empty`` if none)."""
    return {p.name: p.default for p in inspect.signature(impl).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _defaults(name: str, impl: Callable, given: Mapping[str, Any], fallback: Mapping[str, Any]) -> dict:
    """Every keyword-only parameter of ``impl`` with its default: ``given``, else ``impl``'s own,
    else ``fallback``'s (the base's); one with none of them is an error."""
    out = {}
    for key, default in _keywords(impl).items():
        if key in given:
            out[key] = given[key]
        elif default is not inspect.Parameter.empty:
            out[key] = default
        elif key in fallback:
            out[key] = fallback[key]
        else:
            raise TypeError(f"{name}: hyper-parameter {key!r} of {impl.__qualname__} has no default")
    return out


_TYPE_NAMES = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,), "None": (type(None),)}


def _types(impl: Callable, names) -> dict[str, tuple[type, ...]]:
    """Allowed Python types of each hyper-parameter, from its annotation when that is a union of
    float, int, str, bool and None (float admits int), else from its default (None: any type)."""
    params = inspect.signature(impl).parameters
    out = {}
    for name in names:
        param = params[name]
        note = param.annotation if isinstance(param.annotation, str) else getattr(param.annotation, "__name__", "")
        parts = [part.strip() for part in str(note).split("|")] if note else []
        if parts and all(part in _TYPE_NAMES for part in parts):
            out[name] = tuple(t for part in parts for t in _TYPE_NAMES[part])
        elif param.default not in (None, inspect.Parameter.empty):
            default = param.default
            out[name] = (int, float) if isinstance(default, float) else (list, tuple) \
                if isinstance(default, tuple) else (type(default),)
    return out


def _add(spec: AlgorithmSpec) -> None:
    if spec.name in ALGORITHMS:
        raise ValueError(f"algorithm {spec.name!r} is registered twice")
    ALGORITHMS[spec.name] = spec


def register(name: str, *, switches: Mapping[str, Any] | None = None, settings: Callable | None = None,
             **spec):
    """Decorator: register ``impl`` under ``name``. ``switches`` name keyword-only parameters of
    ``impl`` that are not hyper-parameters, with the base algorithm's values; ``settings`` is an
    implementation for several privacy targets at once (:meth:`AlgorithmSpec.fit_settings`),
    called with the same keywords. Other keywords are :class:`AlgorithmSpec` fields."""

    def decorate(impl):
        fixed = dict(switches or {})
        keywords = _defaults(name, impl, fixed, {})
        unknown = sorted(set(fixed) - set(keywords))
        if unknown:
            raise TypeError(f"{name}: switches {unknown} are not keyword-only parameters of {impl.__qualname__}")
        defaults = {k: v for k, v in keywords.items() if k not in fixed}
        _add(AlgorithmSpec(name=name, impl=impl, defaults=defaults, types=_types(impl, defaults), switches=fixed,
                           settings_impl=settings, **spec))
        return impl

    return decorate


def register_variant(name: str, *, of: str, impl: Callable | None = None,
                     switches: Mapping[str, Any] | None = None, defaults: Mapping[str, Any] | None = None,
                     drop: tuple[str, ...] = (), variant: str = "reference", **spec) -> AlgorithmSpec:
    """Register ``name`` as a variant of the registered algorithm ``of``.

    Without ``impl``: the base's implementation with ``switches`` changed, the defaults in
    ``defaults`` changed and the hyper-parameters in ``drop`` removed (held at the base's value:
    they do not apply to the variant). With ``impl`` (published code that differs in kind): its
    keyword-only parameters are the variant's hyper-parameters, and one without a default of its
    own takes ``defaults``' or else the base's, so a shared default is written once. ``private``,
    ``depends_on_epsilon``, ``audit`` (and with it ``audit_limits``) follow the base unless given; other keywords are
    :class:`AlgorithmSpec` fields (``caveat``, ``dp_as_implemented``, ``description``)."""
    base = ALGORITHMS[of]
    changed, given = dict(switches or {}), dict(defaults or {})
    spec.setdefault("private", base.private)
    spec.setdefault("depends_on_epsilon", base.depends_on_epsilon)
    spec.setdefault("audit", base.audit)
    spec.setdefault("needs", base.needs)
    spec.setdefault("size_bounds", base.size_bounds)
    domains = {**base.domains, **spec.pop("domains", {})}  # kept for the variant's own hyper-parameters
    # the audit's statements about its mutants follow the cases they were made on
    spec.setdefault("audit_limits", base.audit_limits if spec["audit"] is base.audit else {})
    if impl is None:
        for what, names, allowed in (("switches", changed, base.switches), ("defaults", given, base.defaults),
                                     ("drop", drop, base.defaults)):
            unknown = sorted(set(names) - set(allowed))
            if unknown:
                raise TypeError(f"variant {name!r}: {what} {unknown} are not in {of!r}'s {sorted(allowed)}")
        kept = {k: v for k, v in base.defaults.items() if k not in drop}
        variant_spec = AlgorithmSpec(
            name=name, impl=base.impl, defaults={**kept, **given}, types=_types(base.impl, kept),
            switches={**base.switches, **changed, **{k: base.defaults[k] for k in drop}},
            settings_impl=base.settings_impl, variant=variant, base=of,
            domains={k: d for k, d in domains.items() if k in kept}, **spec)
    else:
        keywords = _defaults(name, impl, {**given, **changed}, base.defaults)
        hyper = {k: v for k, v in keywords.items() if k not in changed}
        variant_spec = AlgorithmSpec(
            name=name, impl=impl, defaults=hyper, types=_types(impl, hyper), switches=changed,
            variant=variant, base=of, domains={k: d for k, d in domains.items() if k in hyper}, **spec)
    _add(variant_spec)
    return variant_spec


def get_algorithm(name: str) -> AlgorithmSpec:
    _load_all()
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; known algorithms: {', '.join(sorted(ALGORITHMS))}") from None


def algorithm_names() -> list[str]:
    _load_all()
    return sorted(ALGORITHMS)


#: modules of this package that define no algorithm
_INFRASTRUCTURE = {"base", "registry", "audit_cases"}


@functools.cache
def _load_all() -> None:
    """Import every module of this package and of its family packages once (recursively), so
    their registrations run. A family is a folder (``dp_agd/``, ``blackbox/``, ...): its
    ``__init__`` registers the family's algorithm and states its privacy argument, and the
    modules beside it (its theory, its engine, further members) are imported here too, whether
    or not they register anything; there is no naming convention to follow.

    The package is walked on the first call only (cached; a call that raises is not, so a walk
    that fails part way is repeated on the next call): a walk lists the package's folders on
    disk, and Snakemake's input functions ask for an algorithm once or more per job, so walking
    on every call cost most of the workflow's DAG building (thousands of walks for the default
    target)."""
    import importlib
    import pkgutil

    package = importlib.import_module(__name__.rsplit(".", 1)[0])
    for module in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
        if module.name.rsplit(".", 1)[-1] not in _INFRASTRUCTURE:
            importlib.import_module(module.name)
