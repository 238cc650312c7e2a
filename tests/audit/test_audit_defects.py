"""The defects issue 22 found, each with a test that failed on the code before it: the filter's
divisor, the reference variant's adjacency, the black box's δ > 0 path and its stochastic
solvers' shared solve."""

from __future__ import annotations

import numpy as np
import pytest

from dperm import audit
from dperm.algorithms import algorithm_names, get_algorithm
from dperm.algorithms.blackbox import theory as bb
from dperm.privacy import calibration_faults as faults


def _case(name, fragment):
    cases = [c for c in get_algorithm(name).audit() if fragment in c.name]
    assert cases, f"{name} has no case named like {fragment!r}"
    return cases[0]


def test_the_filter_divides_by_the_public_row_count():
    """Five rows push, a sixth joins (add/remove): dividing by the true n shrinks every release on
    D′ by 5/6, which −‖w‖ shows (ε_LB ≈ 3 at claimed 1 before the fix); with the public n the
    correct filter passes, and the mutant that reads the true n is caught on the same case."""
    case = _case("dp-gd-filter", "row count")

    def only(subject):
        return audit.Subject(subject.name, subject.kind, subject.expect_private, subject.fit, lambda: [case],
                             mutant=subject.mutant, limit=subject.limit)

    correct = audit.run_subject(only(audit.subject("dp-gd-filter")))[0]
    assert correct["verdict"] == "passes", correct
    mutant = audit.run_subject(only(audit.subject("mutant: dp-gd-filter, true row count")))[0]
    assert mutant["verdict"] == "caught", mutant


@pytest.mark.parametrize("name", [n for n in algorithm_names() if get_algorithm(n).private])
def test_every_case_pairs_neighbours_of_the_adjacency_its_releases_record(name):
    """A case's pair must be neighbours under the relation the algorithm's records claim: one
    row more (add/remove) or one row replaced (equal sizes). dp-lssgd-reference recorded
    add/remove while its case swapped a row."""
    spec = get_algorithm(name)
    for case in spec.audit():
        draws = 1 if case.draws_per_call else 2
        result = spec.fit(case.d, case.privacy, np.random.default_rng(0), draws, **case.hyper)
        pair = "replace-one" if case.d.n == case.d_prime.n else "add-remove"
        assert result.adjacency == pair, f"{name} / {case.name}: records {result.adjacency}, pair is {pair}"


def test_the_black_box_is_audited_on_its_delta_path():
    """The Markov remedy (Katyusha, δ > 0, high probability) has a case, and passes it."""
    cases = [c for c in get_algorithm("outpert-blackbox").audit()
             if c.privacy.delta > 0 and c.hyper.get("solver") == "katyusha"
             and c.hyper.get("high_probability", True)]
    assert cases
    subject = audit.subject("outpert-blackbox")
    rows = audit.run_subject(audit.Subject(subject.name, subject.kind, True, subject.fit, lambda: cases), scale=0.1)
    assert rows[0]["verdict"] == "passes" and "Markov" in rows[0]["accounting"]


def test_stochastic_black_box_solvers_solve_afresh_for_every_run():
    """Each run of a stochastic solver's case is its own call (its own solve): the noiseless
    releases differ from run to run, so the solver's randomness, and any failure of it, is part
    of what the audit sees (the shared solve made all runs of a case one solve)."""
    stochastic = [c for c in get_algorithm("outpert-blackbox").audit() if c.hyper.get("solver") in bb.STOCHASTIC]
    assert {c.hyper["solver"] for c in stochastic} == set(bb.STOCHASTIC)
    spec = get_algorithm("outpert-blackbox")
    for case in stochastic:
        assert case.draws_per_call == 1, case.name
        calls = []

        def fit(*args, calls=calls, **kwargs):
            calls.append(args[3])
            return spec.fit(*args, **kwargs)

        with faults.injected(noise=0.0):
            weights, _ = audit._releases(fit, case, case.d_prime, 4, (0, 0))
        assert calls == [1, 1, 1, 1], case.name
        if case.privacy.delta == 0:  # (the Markov path solves to 1e-5·α: its solves agree to the last digit)
            assert len(np.unique(weights[:, -1])) == 4, case.name
