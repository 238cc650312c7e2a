"""The privacy audit's subjects (dperm.audit runs them; docs/audit.md): every registered private
algorithm on its own cases, its mutants, and the controls of :mod:`dperm.audit_controls`.

Mutants of a registered algorithm (every one that is private and DP as implemented; a reference
variant that is not is itself a control): "half noise" and "sensitivity halved", built from its
own calibration through :mod:`dperm.privacy.calibration_faults`; "wrong adjacency" for an
add/remove algorithm whose cases can be rebuilt on replace-one neighbours; and the ones it
declares (``register(..., mutants=...)``). A newly registered algorithm gets them by itself: no
line here names an algorithm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .algorithms.audit_cases import AuditCase, Mutant


@dataclass(frozen=True)
class Subject:
    """One audited thing: a registered algorithm, a reference variant, a mutant or a control.
    ``fit`` has the algorithm interface; ``expect_private`` says what a sound audit must find;
    ``mutant`` (for mutants of a registered algorithm) the faults injected around ``fit``;
    ``limit`` why the audit cannot catch it, if it cannot."""

    name: str
    kind: str  # "algorithm", "reference" or "mutant"
    expect_private: bool
    fit: Callable
    cases: Callable[[], list[AuditCase]]
    description: str = ""
    epsilon_computed: bool = False
    algorithms: tuple[str, ...] = ()  # the registered algorithms whose code it runs
    mutant: Mutant | None = None
    limit: str = ""



def registered_subjects() -> list[Subject]:
    """Every registered private algorithm, with its own audit cases."""
    from .algorithms import algorithm_names, get_algorithm

    out = []
    for name in algorithm_names():
        spec = get_algorithm(name)
        if not spec.private:
            continue
        if spec.audit is None:
            raise ValueError(f"private algorithm {name!r} registers no audit cases (audit=...)")
        kind = "reference" if spec.variant == "reference" else "algorithm"
        out.append(Subject(name, kind, spec.dp_as_implemented, spec.fit, spec.audit,
                           description=spec.caveat or spec.description,
                           epsilon_computed=not spec.depends_on_epsilon, algorithms=(name,)))
    return out


def _wrong_adjacency(spec) -> Mutant | None:
    """An add/remove algorithm claiming replace-one: its add/remove cases that can be rebuilt,
    rebuilt on replace-one neighbours (the differing row replaces one, so the sensitivity it was
    calibrated to doubles), its releases relabelled. None when there is no such case."""
    cases = [c for c in spec.audit() if c.rebuild is not None and c.d.n != c.d_prime.n]
    if not cases:
        return None

    def rebuilt():
        return [c.rebuild("replace-one") for c in spec.audit() if c.rebuild is not None and c.d.n != c.d_prime.n]

    def fit(problem, privacy, rng, draws=1, **hyper):
        result = spec.fit(problem, privacy, rng, draws, **hyper)
        result.adjacency = "replace-one"  # what the mutant claims
        return result

    return Mutant("wrong adjacency", "calibrated for add/remove, claimed for replace-one (the differing row "
                  "replaces one: twice the sensitivity)", fit=fit, cases=rebuilt, factor=2.0)


def mutants_of(spec) -> list[Mutant]:
    """The mutants of a registered algorithm: half noise, the sensitivity halved, the wrong
    adjacency (add/remove algorithms) and the ones it declares."""
    out = [Mutant("half noise", "every noise scale halved (calibration_faults: noise 0.5)", noise=0.5, factor=2.0),
           Mutant("sensitivity halved", "every calibrated sensitivity halved (calibration_faults: sensitivity 0.5)",
                  sensitivity=0.5, factor=2.0)]
    wrong = _wrong_adjacency(spec)
    if wrong is not None:
        out.append(wrong)
    return out + list(spec.mutants() if spec.mutants else [])


def mutant_subjects() -> list[Subject]:
    """Every mutant of every registered algorithm that is private and DP as implemented (a
    reference variant that is not is itself a control)."""
    from .algorithms import algorithm_names, get_algorithm

    out = []
    for name in algorithm_names():
        spec = get_algorithm(name)
        if not (spec.private and spec.dp_as_implemented):
            continue
        for m in mutants_of(spec):
            out.append(Subject(f"mutant: {name}, {m.name}", "mutant", False, m.fit or spec.fit, spec.audit,
                               description=m.description, epsilon_computed=not spec.depends_on_epsilon,
                               algorithms=(name,), mutant=m, limit=spec.audit_limits.get(m.name, "")))
    return out


def subjects() -> list[Subject]:
    """Every subject: the registered algorithms, their mutants, the controls."""
    from .audit_controls import control_subjects

    return registered_subjects() + mutant_subjects() + control_subjects(Subject)


def slug(name: str) -> str:
    """A subject's file name: lower-case letters, digits and hyphens."""
    return "-".join("".join(ch if ch.isalnum() else " " for ch in name.lower()).split())


def subject(name: str) -> Subject:
    """The subject of a name or of its slug."""
    found = {s.name: s for s in subjects()}
    found.update({slug(s.name): s for s in list(found.values())})
    if name not in found:
        raise KeyError(f"no audit subject {name!r}; subjects: {sorted(slug(s.name) for s in subjects())}")
    return found[name]
