"""The audit's tables: a mutant's verdict over its cases, the score over distinct mutants, the
rows that fail the audit, and the scorecard's score beside an algorithm's rows."""

from __future__ import annotations

import math

import pandas as pd

from dperm.report import scorecard as sc
from dperm.report.audit import failures, mutation_score, mutation_table, summary_table, write_audit


def _row(subject, kind, verdict, case="c", eps_lb=0.0, mutant="", reason="", algorithms="a", tightness=math.nan):
    return {"subject": subject, "kind": kind, "expected": "private" if kind == "algorithm" else "not private",
            "case": case, "adjacency": "replace-one", "epsilon": 1.0, "delta": 0.0, "epsilon_claimed": 1.0,
            "runs": 100, "epsilon_lower": eps_lb, "threshold": 0.0, "direction": "D>D'", "verdict": verdict,
            "accounting": "", "algorithms": algorithms, "description": "", "mutant": mutant, "factor": 2.0,
            "caught": "", "reason": reason, "runs_needed": math.inf, "tightness": tightness, "achieved_ratio": 1.0}


ROWS = pd.DataFrame([
    _row("a", "algorithm", "passes", tightness=0.6, eps_lb=0.6),
    _row("mutant: a, half noise", "mutant", "NOT CAUGHT", case="c1", eps_lb=0.5, mutant="half noise"),
    _row("mutant: a, half noise", "mutant", "caught", case="c2", eps_lb=1.4, mutant="half noise"),
    _row("mutant: a, sensitivity halved", "mutant", "same release as half noise", mutant="sensitivity halved"),
    _row("mutant: a, wrong adjacency", "mutant", "NOT CAUGHT", eps_lb=0.9, mutant="wrong adjacency",
         reason="cannot, because"),
    _row("mutant: b, half noise", "mutant", "NOT CAUGHT", eps_lb=0.2, mutant="half noise", algorithms="b"),
])


def test_a_mutant_is_caught_if_any_case_catches_it_and_linear_twins_do_not_count_twice():
    table = mutation_table(ROWS)
    a = table[table["algorithm"] == "a"].set_index("mutant")
    assert a.loc["half noise", "verdict"] == "caught" and a.loc["half noise", "epsilon_lower"] == 1.4
    assert a.loc["half noise", "case"] == "c2"
    assert a.loc["wrong adjacency", "reason"] == "cannot, because"
    assert mutation_score(table[table["algorithm"] == "a"]) == (1, 2)
    assert mutation_score(table) == (1, 3)


def test_only_a_mutant_caught_nowhere_and_without_a_reason_fails():
    failed = failures(ROWS)
    assert list(failed["subject"]) == ["mutant: b, half noise"]


def test_the_summary_and_the_scorecard_carry_the_score(tmp_path):
    summary = summary_table(ROWS, mutation_table(ROWS)).set_index("algorithm")
    assert summary.loc["a", "tightness"] == 0.6 and (summary.loc["a", "mutants_caught"], summary.loc["a", "mutants"]) \
        == (1, 2)
    paths = [tmp_path / f"audit.{ext}" for ext in ("csv", "md", "png", "pdf")]
    write_audit(ROWS, *paths, mutation=(tmp_path / "m.csv", tmp_path / "m.md"),
                summary=(tmp_path / "s.csv", tmp_path / "s.md"))
    written = pd.read_csv(paths[0])
    shown = sc.audit_for(written, {"a"})
    assert set(shown["mutants caught"]) == {"1/2"}
    assert "Score: 1/3." in (tmp_path / "m.md").read_text()
