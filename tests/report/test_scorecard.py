"""The scorecard: plugin parts are checked, verdicts normalised, deviations resolved against the
docs, labels counted from the summaries and audit rows matched to the algorithms a paper runs."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml
from conftest import REPO

from dperm import grid, papers
from dperm.report import scorecard as sc


def test_claims_tables_keep_the_shared_columns_and_join_their_scope():
    frame = pd.DataFrame([{"claim": "c", "source": "paper", "dataset": "adult", "model": "lr", "verdict": "supported",
                           "test": "Welch", "reason": "r"}])
    table = sc.claims_table(frame)
    assert list(table.columns) == sc.CLAIM_COLUMNS and table["scope"].iloc[0] == "adult / lr"


def _card(verdict="supported", reason="because"):
    return sc.PaperCard(sc.comparison_rows([{"source": "T", "item": "a", "published": 2.0, "ours": 3.0,
                                             "ours_ci95": 0.1, "note": ""},
                                            {"source": "T", "item": "b", "published": 0.0, "ours": 1.0,
                                             "ours_ci95": math.nan, "note": ""}]),
                        sc.claim_rows([{"claim": "c", "source": "paper", "scope": "", "verdict": verdict,
                                        "test": "a test", "reason": reason}]))


def test_checked_adds_the_ratio_and_refuses_bad_parts():
    card = sc.checked("p", _card())
    assert card.comparisons["ratio"].iloc[0] == 1.5 and math.isnan(card.comparisons["ratio"].iloc[1])
    with pytest.raises(ValueError, match="paper 'p'.*'maybe'"):
        sc.checked("p", _card(verdict="maybe"))
    with pytest.raises(ValueError, match="needs a reason"):
        sc.checked("p", _card(reason=""))
    untested = _card()
    untested.claims["test"] = ""
    with pytest.raises(ValueError, match="names the test"):
        sc.checked("p", untested)
    wrong = _card()
    wrong.claims = wrong.claims.rename(columns={"reason": "evidence"})
    with pytest.raises(ValueError, match="claims have columns"):
        sc.checked("p", wrong)


DOCS = {"deviations.md": '# D\n\n<a id="one"></a>\n### The first departure\n\ntext\n',
        "privacy.md": '<a id="leak"></a>\n## A leak\n'}


def test_deviations_read_headings_and_name_an_unknown_anchor():
    headings = sc.doc_headings(DOCS)
    table = sc.deviations("p", ["one", "privacy.md#leak"], headings)
    assert list(table["heading"]) == ["The first departure", "A leak"]
    assert list(table["link"]) == ["docs/deviations.md#one", "docs/privacy.md#leak"]
    with pytest.raises(ValueError, match="paper 'p': deviation 'two'.*deviations.md#one"):
        sc.deviations("p", ["two"], headings)


def test_labels_count_what_a_reader_must_weigh():
    summary = pd.DataFrame({"experiment": ["e"] * 4, "dp_as_implemented": ["True", "False", "n/a", "True"],
                            "tuning": ["private", "non-private", "n/a", "private"],
                            "preprocessing": ["data-dependent", "public-bounds", "data-dependent", "public-bounds"],
                            "learns": ["yes", "no", "yes", "n/a"]})
    row = sc.labels(summary).iloc[0]
    assert (row["cells"], row["private cells"], row["tuning non-private"], row["not DP as implemented"],
            row["data-dependent preprocessing"], row["not learning"]) == (4, 3, 1, 1, 2, 1)


def test_audit_rows_follow_the_algorithms_a_subject_runs():
    audit = pd.DataFrame({"subject": ["a", "mutant", "other"], "kind": ["algorithm", "mutant", "algorithm"],
                          "case": ["c"] * 3, "epsilon_claimed": [1.0] * 3, "epsilon_lower": [0.0, 2.0, 0.0],
                          "verdict": ["passes", "caught", "passes"], "algorithms": ["a", "b;a", "z"]})
    assert list(sc.audit_for(audit, {"a"})["subject"]) == ["a", "mutant"]
    assert sc.audit_for(audit, {"y"}).empty


def test_the_audit_table_the_workflow_writes_keeps_the_algorithms_column(tmp_path):
    """The scorecard reads results/audit/audit.csv as write_audit writes it, not the raw rows."""
    from dperm.report.audit import write_audit

    rows = pd.DataFrame({"subject": ["a", "mutant"], "kind": ["algorithm", "mutant"], "expected": ["private", "not"],
                         "case": ["c", "c"], "adjacency": ["add-remove"] * 2, "epsilon": [1.0] * 2, "delta": [0.0] * 2,
                         "epsilon_claimed": [1.0] * 2, "runs": [100] * 2, "epsilon_lower": [0.0, 2.0],
                         "threshold": [0.0] * 2, "direction": ["D>D'"] * 2, "verdict": ["passes", "caught"],
                         "accounting": [""] * 2, "algorithms": ["a", "b;a"], "description": [""] * 2})
    paths = [tmp_path / f"audit.{ext}" for ext in ("csv", "md", "png", "pdf")]
    write_audit(rows, *paths)
    written = pd.read_csv(paths[0])
    assert list(sc.audit_for(written, {"a"})["subject"]) == ["a", "mutant"]


@pytest.mark.parametrize("path", sorted((REPO / "config" / "papers").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_declared_deviation_is_an_anchor_of_the_docs(path):
    docs = {name: (REPO / "docs" / name).read_text(encoding="utf-8") for name in ("deviations.md", "privacy.md")}
    paper = grid.load_paper(path)
    table = sc.deviations(paper.key, list(paper.deviations), sc.doc_headings(docs))
    assert len(table) == len(paper.deviations)


def test_a_plugin_with_scorecard_tables_has_a_scorecard_function_and_the_reverse():
    for name in papers.names():
        plugin = papers.plugin(name)
        assert hasattr(plugin, "SCORECARD_TABLES") == hasattr(plugin, "scorecard"), name


def test_the_markdown_links_the_docs_from_where_it_is_written():
    section = sc.Section("p", "Paper", sc.checked("p", _card()),
                         sc.deviations("p", ["one"], sc.doc_headings(DOCS)), pd.DataFrame(),
                         pd.DataFrame(columns=["subject", "kind", "case", "epsilon_claimed", "epsilon_lower", "verdict"]),
                         3, pd.DataFrame({"experiment": ["e"], "label": ["m"]}))
    audit = pd.DataFrame(columns=sc.AUDIT_COLUMNS)
    text = sc.to_markdown({"quick": True, "audit": {"scale": 0.1}}, [section], audit, docs_link="../../docs")
    assert "[The first departure](../../docs/deviations.md#one)" in text
    assert "QUICK RUN" in text and "Reduced audit: 0.1" in text
    assert "Cells that do not learn (1 of 3)" in text and "| 1 of 3 |" in text
    assert "| T | a | 2 | 3 | 0.1 | 1.5 |" in text
    html = sc.to_html({"quick": False, "audit": {"scale": 1.0}}, [section], audit)
    assert "QUICK RUN" not in html and "The first departure" in html


def test_lee2018_scorecard_reads_its_tables(tmp_path):
    """The plugin's own tables as its rules write them (column names), turned into the card."""
    card = papers.plugin("lee2018").scorecard({
        "table1": pd.DataFrame({"t": [0], "grad_norm": [0.5], "grad_norm_published": [0.7], "noisy_grad_norm": [0.8],
                                "noisy_grad_norm_published": [0.9], "noise_rms": [0.5], "objective": [0.69],
                                "objective_published": [0.69]}),
        "table2": pd.DataFrame({"dataset": ["adult"], "n_ours": [45222], "dim_ours": [105], "n_paper": [48842],
                                "dim_paper": [124], "status": ["ok"]}),
        "claims": pd.DataFrame({"claim": ["x"], "source": ["paper"], "scope": ["adult / lr"],
                                "verdict": ["inconclusive"], "test": ["Welch"], "reason": ["2/5"]})})
    card = sc.checked("lee2018", card)
    assert len(card.comparisons) == 5 and card.claims["verdict"].tolist() == ["inconclusive"]
    assert card.claims["reason"].iloc[0] == "2/5"
    assert yaml.safe_load((REPO / "config" / "papers" / "lee2018.yaml").read_text())["deviations"]


# Entries about the project itself, not about any paper.
GENERAL = {"deviations.md#test-data"}


def test_every_entry_of_the_docs_is_declared_by_a_paper():
    """A deviation or privacy finding no paper declares would be missing from the scorecard."""
    declared = set()
    for path in (REPO / "config" / "papers").glob("*.yaml"):
        for anchor in yaml.safe_load(path.read_text(encoding="utf-8")).get("deviations", []):
            declared.add(anchor if "#" in anchor else f"deviations.md#{anchor}")
    docs = {name: (REPO / "docs" / name).read_text(encoding="utf-8") for name in ("deviations.md", "privacy.md")}
    missing = sorted(set(sc.doc_headings(docs)) - declared - GENERAL)
    assert not missing, f"no paper config declares {missing}"
