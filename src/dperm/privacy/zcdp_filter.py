"""A zCDP privacy filter: a fixed ρ budget charged by adaptively chosen primitives."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .validation import check_delta, check_rho
from .zcdp import zcdp_from_dp, zcdp_to_dp

__all__ = ["BudgetExceededError", "Charge", "ZCDPFilter"]

# Every finite double is an integer multiple of 2**-1074 (the smallest subnormal), so a sum of
# doubles kept as an integer count of 2**-1074 units is exact: no rounding in either direction.
_SHIFT = 1074
_ONE = 1 << _SHIFT


def _units(x: float) -> int:
    """x·2**1074 as an exact integer, for a finite double x >= 0."""
    num, den = x.as_integer_ratio()  # den = 2**j with j <= 1074
    return num << (_SHIFT + 1 - den.bit_length())


def _rho(rho) -> float:
    """A valid charge as a float: the fast path for plain non-negative finite floats/ints, the
    shared validator (with its error messages) for anything else."""
    if type(rho) is float or type(rho) is int:
        r = float(rho)
        if r >= 0.0 and r != math.inf:  # NaN fails the first test
            return r
    return float(check_rho(rho))


class BudgetExceededError(RuntimeError):
    """Raised by :meth:`ZCDPFilter.charge` when a charge would take the total above the budget.
    Nothing is recorded when it is raised, so the caller can stop and release its last output."""


@dataclass(frozen=True)
class Charge:
    """One ledger entry: what was paid for, its ρ and the running total after it."""

    what: str
    rho: float
    total: float


class ZCDPFilter:
    """Fixed-total zCDP budget that primitives charge one by one (a *privacy filter*).

    Guarantee: if every released output was produced by a primitive that was charged here *before*
    it ran, with ρ_t allowed to depend on all earlier outputs, the whole interaction is
    ``budget``-zCDP. This adaptive-share statement is a filter result, not plain zCDP composition
    (which Lee & Kifer 2018, Theorem 5.1, invokes; docs/privacy.md#adaptive-budget): Rényi filters
    are proved by Feldman & Zrnic (2021, "Individual privacy accounting via a Rényi filter",
    NeurIPS) and fully adaptive zCDP/RDP filters by Whitehouse, Ramdas, Rogers & Wu (2023,
    "Fully-adaptive composition in differential privacy", ICML). Adjacency: that of the charged
    primitives (Lee & Kifer 2018: add/remove).

    The filter never lets the recorded total exceed the budget: :meth:`charge` raises
    :class:`BudgetExceededError` and :meth:`try_charge` returns ``False`` (recording nothing)
    when ``spent + rho > budget``. This is how DP-AGD should stop: ask for the next charge and,
    on refusal, return the last iterate. The reference code's "subtract, run, and stop once the
    remainder is negative" discards the outputs of the primitives that overdrew, so it releases
    the same iterate; :meth:`charge_remaining` lets an algorithm spend exactly what is left.

    Example::

        f = ZCDPFilter.from_dp(epsilon=1.0, delta=1e-8)
        if not f.try_charge(rho_ng, what="noisy gradient"):
            return w                      # budget exhausted: release the last iterate
    """

    def __init__(self, budget) -> None:
        self._budget = float(check_rho(budget, "budget", allow_zero=False))
        self._ledger: list[tuple] = []  # (what, rho, total in units); Charges are built on demand
        self._budget_units = _units(self._budget)
        self._spent_units = 0  # exact total charged, in units of 2**-1074

    @classmethod
    def from_dp(cls, epsilon, delta) -> ZCDPFilter:
        """Filter whose ρ budget implies (ε, δ)-DP (:func:`~dperm.privacy.zcdp.zcdp_from_dp`)."""
        return cls(zcdp_from_dp(epsilon, delta))

    # -- state -------------------------------------------------------------------------------
    @property
    def budget(self) -> float:
        """Total ρ budget."""
        return self._budget

    @property
    def spent(self) -> float:
        """ρ charged so far (the exact sum of the ledger, rounded once, to nearest)."""
        return self._spent_units / _ONE  # int / int is correctly rounded

    @property
    def remaining(self) -> float:
        """ρ still available (never negative; the exact remainder rounded once, to nearest)."""
        return max(0.0, (self._budget_units - self._spent_units) / _ONE)

    @property
    def ledger(self) -> tuple[Charge, ...]:
        """All charges so far, oldest first."""
        return tuple(Charge(what, rho, total / _ONE) for what, rho, total in self._ledger)

    def epsilon(self, delta) -> float:
        """(ε, δ)-DP guarantee of what has been spent so far (Bun & Steinke Prop. 1.3)."""
        return zcdp_to_dp(self.spent, check_delta(delta))

    # -- charging ----------------------------------------------------------------------------
    def can_afford(self, rho) -> bool:
        """Whether a charge of ``rho`` would keep the total within the budget."""
        return self._spent_units + _units(_rho(rho)) <= self._budget_units

    def charge(self, rho, what: str = "") -> float:
        """Record a charge of ``rho`` for ``what``; return the remaining budget.

        Raises :class:`BudgetExceededError` (and records nothing) if the total would exceed the
        budget, and ``ValueError`` for a negative or non-finite ``rho``.
        """
        r = _rho(rho)
        if not self._record(r, what):
            raise BudgetExceededError(
                f"charging rho={r!r} for {what or 'an unnamed primitive'} would exceed the zCDP "
                f"budget: spent {self.spent!r} of {self._budget!r}, remaining {self.remaining!r}"
            )
        return self.remaining

    def try_charge(self, rho, what: str = "") -> bool:
        """Charge ``rho`` if affordable and return ``True``; otherwise record nothing, return ``False``."""
        return self._record(_rho(rho), what)

    def _record(self, r: float, what) -> bool:
        total = self._spent_units + _units(r)
        if total > self._budget_units:
            return False
        self._spent_units = total
        self._ledger.append((str(what), r, total))
        return True

    def charge_remaining(self, what: str = "") -> float:
        """Charge whatever is left (possibly 0) and return the amount charged. Rounded down by a
        few ulps if needed so that the recorded total never exceeds the budget."""
        r = self.remaining
        while r > 0.0 and not self.can_afford(r):
            r = math.nextafter(r, 0.0)
        self.charge(r, what)
        return r

    def __repr__(self) -> str:
        return (f"ZCDPFilter(budget={self._budget!r}, spent={self.spent!r}, "
                f"charges={len(self._ledger)})")
