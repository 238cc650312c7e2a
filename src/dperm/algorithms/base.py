"""The algorithm interface: ``fit(problem, privacy, rng, draws=1, **hyper) -> FitResult``.

* ``problem`` (:class:`dperm.problem.Problem`) carries the training rows, the loss (with ``y`` in
  the loss's label form) and the L2 coefficient of the model.
* ``privacy`` (:class:`Privacy`) carries the target (ε, δ); ε = inf means non-private.
* ``rng`` is the only source of randomness; ``draws`` independent releases are returned at once so
  that work that does not depend on the noise (a gradient-descent path, an L-BFGS solve) is done
  once and the noise drawn ``draws`` times.
* Hyper-parameters are keyword arguments whose defaults are the paper's; config overrides them.

An algorithm whose runs at several privacy targets can share work (DP-AGD: one pass over X per
round for the chains of every ε) also offers ``fit_settings(problem, privacies, rngs, draws=1,
**hyper) -> list[FitResult]`` (:meth:`AlgorithmSpec.fit_settings`): result i must have the law of
``fit(problem, privacies[i], rngs[i], draws, **hyper)``. The protocol uses it for the ε of a row.

Each algorithm module's docstring states the adjacency, the sensitivity argument and the
accounting it follows, with the paper, and says where it departs from the paper or its code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..rngs import spawn_generators

ADJACENCIES = ("add-remove", "replace-one", "none")


@dataclass(frozen=True)
class Privacy:
    """Target privacy of one cell: (ε, δ)-DP; ε = inf for non-private algorithms."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        eps, delta = float(self.epsilon), float(self.delta)
        if math.isnan(eps) or eps <= 0:
            raise ValueError(f"epsilon must be > 0 (or inf for non-private); got epsilon={self.epsilon!r}")
        if not (0.0 <= delta < 1.0):
            raise ValueError(f"delta must be in [0, 1); got delta={self.delta!r}")

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)


@dataclass
class FitResult:
    """What one call of an algorithm released, and what it cost.

    ``weights`` is ``(draws, p)``. ``epsilon_spent`` is the ε the algorithm's accounting certifies
    (equal to the target for calibrated algorithms, computed for SGD-MA-style ones; inf when not
    private); it may be an array with one value per draw. ``grad_evals`` counts per-example gradient
    evaluations divided by n (full-gradient equivalents). ``seconds_per_draw`` is set by algorithms
    whose draws share work, to report what one independent run would cost; otherwise the protocol
    uses the measured wall time divided by ``draws``. ``path`` holds, for an algorithm run with
    ``snapshots`` (its privacy setting a step count, e.g. SGD-MA), the release after each
    requested smaller number of steps of the same run: steps -> :class:`FitResult`.
    ``accounting`` names how ``epsilon_spent`` was obtained (the composition theorem or
    accountant and its conversion to (ε, δ), e.g. ``"rdp, improved conversion"``); it is recorded
    with every fit.
    """

    weights: np.ndarray
    epsilon_spent: float | np.ndarray
    delta_spent: float
    adjacency: str
    grad_evals: float | np.ndarray = 0.0
    iterations: int | np.ndarray = 0
    seconds_per_draw: float | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    path: dict = field(default_factory=dict)
    accounting: str = ""

    def __post_init__(self):
        self.weights = np.atleast_2d(np.asarray(self.weights, dtype=float))
        if self.adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}; got {self.adjacency!r}")

    @property
    def draws(self) -> int:
        return self.weights.shape[0]


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm (:mod:`.registry`).

    ``impl(problem, privacy, rng, draws, **hyper, **switches)`` is the implementation;
    ``defaults`` are its hyper-parameters with the paper's values (config may override any of
    them); ``switches`` are implementation choices fixed by the registration, never by config: a
    reference variant is the same implementation with other switches (and perhaps other
    defaults), declared once against its ``base`` (:func:`.registry.register_variant`).
    ``types`` are the Python types each hyper-parameter admits (:meth:`check_types`).
    ``settings_impl``, when set, fits several privacy targets at once (:meth:`fit_settings`);
    with ``l2_per_target`` it also takes one λ and one draw count per target (:meth:`fit_trials`).
    ``variant`` is ``correct`` or ``reference``; a reference variant reproduces published code and
    says in ``caveat`` whether it is DP as implemented. ``audit`` returns the cases of its
    black-box privacy audit (:mod:`.audit_cases`); every private algorithm has one. The audit
    also builds mutants of it from its own calibration (half the noise, the sensitivity halved);
    ``mutants`` returns further ones declared beside the hook (:class:`.audit_cases.Mutant`:
    errors outside the calibration, such as a filter that never drops a row), and
    ``audit_limits`` maps a mutant's name to why the audit cannot catch it (shown in the audit
    table; a mutant not caught without one fails the audit).

    Two optional capabilities. ``rdp(problem, epsilon, delta, hyper) -> (Privacy, RdpStatement)``:
    the algorithm may be a base of private selection (:mod:`.private_selection`); given a
    per-trial budget ``epsilon`` (and the cell's ``delta``, for calibrations that take one) it
    returns the target one fit runs at and what that fit satisfies, ρ-zCDP and/or pure ε-DP
    (:class:`dperm.privacy.selection.RdpStatement`), with ``hyper`` its full hyper-parameters.
    ``check(given, where)``: further checks of configured hyper-parameters beyond their types
    (e.g. a nested grid), run by :meth:`check_types` so that a bad value fails before any job.

    What a configuration may give, declared at registration beside the defaults
    (:mod:`.domains`): ``domains`` (hyper-parameter -> the values it admits), ``needs`` (what
    the algorithm needs of its privacy target: a finite ε, δ > 0) and ``size_bounds`` (the
    hyper-parameters that may not exceed the training rows)."""

    name: str
    impl: Callable
    defaults: Mapping[str, Any]
    types: Mapping[str, tuple] = field(default_factory=dict)
    switches: Mapping[str, Any] = field(default_factory=dict)
    settings_impl: Callable | None = None
    variant: str = "correct"
    base: str | None = None
    private: bool = True
    depends_on_epsilon: bool = True
    dp_as_implemented: bool = True
    caveat: str = ""
    description: str = ""
    audit: Callable[[], list] | None = None
    mutants: Callable[[], list] | None = None
    audit_limits: Mapping[str, str] = field(default_factory=dict)
    rdp: Callable | None = None
    check: Callable | None = None
    domains: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple = ()
    size_bounds: tuple = ()
    l2_per_target: bool = False  # settings_impl takes one λ per target (:meth:`fit_trials`)

    @property
    def label(self) -> str:
        """Name for tables and legends, carrying the caveat of a reference variant."""
        if self.variant == "reference":
            tag = "reference, not DP as implemented" if not self.dp_as_implemented else "reference"
            return f"{self.name.removesuffix('-reference')} ({tag})"
        return self.name

    @property
    def shares_settings(self) -> bool:
        """Whether runs at several privacy targets can share work (:meth:`fit_settings`)."""
        return self.settings_impl is not None

    def hyper(self, given: Mapping[str, Any] | None = None) -> dict:
        """``given`` completed with the defaults; an unknown name is a ``TypeError`` that lists
        the allowed ones (a switch is named as such: it is chosen by picking the variant)."""
        given = dict(given or {})
        fixed = sorted(set(given) & set(self.switches))
        if fixed:
            raise TypeError(f"{fixed} of algorithm {self.name!r} is fixed by its registration, not a "
                            f"hyper-parameter: choose the variant instead (base {self.base or self.name!r})")
        unknown = sorted(set(given) - set(self.defaults))
        if unknown:
            raise TypeError(f"unknown hyper-parameter(s) {unknown} for algorithm {self.name!r}; "
                            f"allowed: {sorted(self.defaults)}")
        return {**self.defaults, **given}

    def check_types(self, given: Mapping[str, Any], where: str = "") -> None:
        """A ``ValueError`` naming the first hyper-parameter whose value has a type it does not
        admit (``learning_rate: fast``) or lies outside its domain (``clip: -1``), so a config
        error shows before any job runs."""
        for key, value in given.items():
            allowed = self.types.get(key)
            wrong_bool = isinstance(value, bool) and allowed is not None and bool not in allowed
            if allowed is None or (isinstance(value, allowed) and not wrong_bool):
                continue
            kinds = {"number" if t is float or (t is int and float in allowed) else "integer" if t is int
                     else "null" if t is type(None) else t.__name__ for t in allowed}
            names = " or ".join(sorted(kinds))
            raise ValueError(f"{where}{': ' if where else ''}hyper-parameter {key!r} of algorithm {self.name!r} "
                             f"must be {names}; got {value!r}")
        for key, value in given.items():
            domain = self.domains.get(key)
            if domain is not None and not domain.admits(value):
                raise ValueError(f"{where}{': ' if where else ''}hyper-parameter {key!r} of algorithm {self.name!r} "
                                 f"must be {domain.text}; got {value!r}")
        if self.check is not None:
            self.check(dict(given), where)

    def unmet_needs(self, epsilon: float, delta: float, given: Mapping[str, Any]) -> list[str]:
        """What this algorithm needs of a privacy target (ε, δ) that the target lacks, with the
        hyper-parameters ``given``."""
        hyper = {**self.defaults, **given}
        return [need for need in (check(epsilon, delta, hyper) for check in self.needs) if need]

    def fit(self, problem, privacy, rng, draws: int = 1, **hyper) -> FitResult:
        return self.impl(problem, privacy, rng, draws, **self.hyper(hyper), **self.switches)

    def fit_settings(self, problem, privacies, rngs, draws: int = 1, **hyper) -> list[FitResult]:
        """One result per privacy target; result i has the law of ``fit(problem, privacies[i],
        rngs[i], draws, **hyper)`` (the protocol uses it for the ε of a row)."""
        if self.settings_impl is None:
            raise TypeError(f"algorithm {self.name!r} fits one privacy target at a time")
        return self.settings_impl(problem, list(privacies), list(rngs), draws, **self.hyper(hyper),
                                  **self.switches)

    def fit_trials(self, problem, privacies, rngs, draws, l2s, **hyper) -> list[FitResult]:
        """Targets that differ in λ as well: result i has the law of ``fit(problem at λ = l2s[i],
        privacies[i], rngs[i], draws[i], **hyper)`` and, as in :meth:`fit_settings`, the same
        generator use, so only the work is shared (private selection's trials over λ,
        :mod:`.private_selection`). Only for algorithms registered with ``l2_per_target``."""
        if self.settings_impl is None or not self.l2_per_target:
            raise TypeError(f"algorithm {self.name!r} cannot fit targets with different l2 in one call")
        return self.settings_impl(problem, list(privacies), list(rngs), [int(k) for k in draws],
                                  l2=[float(v) for v in l2s], **self.hyper(hyper), **self.switches)


def draw_rngs(rng: np.random.Generator, draws: int) -> list[np.random.Generator]:
    """Independent child generators, one per draw, derived deterministically from ``rng``: those of
    ``rng.bit_generator.seed_seq.spawn(draws)``, computed together
    (:func:`dperm.rngs.spawn_generators`)."""
    if draws < 1:
        raise ValueError(f"draws must be >= 1; got draws={draws!r}")
    return spawn_generators(rng, draws)
