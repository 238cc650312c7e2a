"""The reproduction scorecard: per paper, every published number we compare with beside ours and
their ratio, every claim with its verdict, every deviation from the paper, the privacy labels the
records carry, and the audit of every algorithm the paper runs. ``results/SCORECARD.md`` and the
first page of the HTML report; generated from the results, never written by hand.

A paper plugin supplies its part through two optional names (see :mod:`dperm.papers`):

* ``SCORECARD_TABLES`` — the names of its own tables (``results/tables/<paper>/<name>.csv``) the
  scorecard reads;
* ``scorecard(tables) -> PaperCard`` — those tables (name -> DataFrame) turned into the
  scorecard's comparisons and claims (:data:`COMPARISON_COLUMNS`, :data:`CLAIM_COLUMNS`).

The rest comes from the configuration and the generic outputs: the paper's ``deviations`` (anchors
of docs/deviations.md or docs/privacy.md, whose headings are read from the docs), the labels of
the cells in its experiment summaries, and the audit table's rows for the algorithms it runs.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field

import pandas as pd

from .claims import COLUMNS as CLAIM_COLUMNS
from .claims import VERDICTS
from .guard import NO, RULE

COMPARISON_COLUMNS = ["source", "item", "published", "ours", "ours_ci95", "note"]
_ANCHOR = re.compile(r'<a id="([^"]+)"></a>\s*\n#+\s*(.+)')


@dataclass
class PaperCard:
    """A paper's comparisons (published number beside ours) and claims (with verdicts); ``note``
    says what is compared, or why nothing is."""

    comparisons: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COMPARISON_COLUMNS))
    claims: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CLAIM_COLUMNS))
    note: str = ""


def comparison_rows(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def claim_rows(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def claims_table(frame: pd.DataFrame, scope: tuple[str, ...] = ("dataset", "model")) -> pd.DataFrame:
    """A paper's claims table (:data:`dperm.report.claims.COLUMNS`, with its own ``scope``
    columns where it has no ``scope`` column) in the scorecard's columns."""
    rows = []
    for _, r in frame.iterrows():
        where = r["scope"] if "scope" in frame and isinstance(r["scope"], str) else \
            " / ".join(str(r[c]) for c in scope if c in frame)
        rows.append({c: (where if c == "scope" else ("" if pd.isna(r.get(c)) else r.get(c))) for c in CLAIM_COLUMNS})
    return claim_rows(rows)


def checked(paper: str, card: PaperCard) -> PaperCard:
    """``card`` with its columns, verdicts and numbers checked and the ratio ours/published
    added; a plugin that returns anything else is an error naming the paper."""
    for name, frame, columns in (("comparisons", card.comparisons, COMPARISON_COLUMNS),
                                 ("claims", card.claims, CLAIM_COLUMNS)):
        if list(frame.columns) != columns:
            raise ValueError(f"paper {paper!r}: scorecard {name} have columns {list(frame.columns)}; "
                             f"expected {columns}")
    bad = sorted(set(card.claims["verdict"]) - set(VERDICTS))
    if bad:
        raise ValueError(f"paper {paper!r}: claim verdicts {bad} are not among {list(VERDICTS)}")
    if card.claims["reason"].fillna("").eq("").any():
        raise ValueError(f"paper {paper!r}: every claim needs a reason for its verdict")
    untested = card.claims["test"].fillna("").eq("") & card.claims["verdict"].ne("not tested")
    if untested.any():
        raise ValueError(f"paper {paper!r}: every verdict names the test it used; none for "
                         f"{list(card.claims.loc[untested, 'claim'])}")
    comparisons = card.comparisons.copy()
    for column in ("published", "ours", "ours_ci95"):
        comparisons[column] = pd.to_numeric(comparisons[column], errors="raise").astype(float)
    comparisons["ratio"] = [o / p if p and not math.isnan(p) else math.nan
                            for o, p in zip(comparisons["ours"], comparisons["published"])]
    return PaperCard(comparisons, card.claims.reset_index(drop=True), card.note)


def doc_headings(texts: dict[str, str]) -> dict[str, tuple[str, str]]:
    """anchor -> (doc file name, heading) for every ``<a id="...">`` followed by a heading."""
    out = {}
    for name, text in texts.items():
        for anchor, heading in _ANCHOR.findall(text):
            out[f"{name}#{anchor}"] = (name, heading.strip())
    return out


def deviations(paper: str, anchors: list[str], headings: dict) -> pd.DataFrame:
    """The paper's declared deviations as (link, heading) rows; an anchor the docs do not have
    is an error naming the paper and the anchors there are."""
    rows = []
    for anchor in anchors:
        key = anchor if "#" in anchor else f"deviations.md#{anchor}"
        if key not in headings:
            raise ValueError(f"paper {paper!r}: deviation {anchor!r} is no anchor of docs/{key.split('#')[0]}; "
                             f"anchors there: {sorted(k for k in headings if k.startswith(key.split('#')[0]))}")
        rows.append({"link": f"docs/{key}", "heading": headings[key][1]})
    return pd.DataFrame(rows, columns=["link", "heading"])


def labels(summaries: pd.DataFrame) -> pd.DataFrame:
    """Per experiment: how many cells, and how many of them carry each label a reader must
    weigh (non-private tuning, data-dependent preprocessing, not DP as implemented, not learning:
    :mod:`.guard`)."""
    rows = []
    for experiment, group in summaries.groupby("experiment", sort=False):
        private = group[group["dp_as_implemented"].astype(str) != "n/a"]
        row = {"experiment": experiment, "cells": len(group), "private cells": len(private),
               "tuning non-private": int((group["tuning"].astype(str) == "non-private").sum()),
               "not DP as implemented": int((private["dp_as_implemented"].astype(str) == "False").sum())}
        if "preprocessing" in group:
            row["data-dependent preprocessing"] = int((group["preprocessing"] == "data-dependent").sum())
        if "learns" in group:
            row["not learning"] = int((group["learns"] == NO).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def audit_for(audit: pd.DataFrame, algorithms: set[str]) -> pd.DataFrame:
    """Rows of the audit table for subjects that run any of ``algorithms``, each with the mutation
    score of the algorithm it audits (its mutants caught / its distinct mutants: how much a pass
    of that algorithm is worth, dperm.report.audit)."""
    from .audit import mutation_score, mutation_table

    runs = audit["algorithms"].fillna("").map(lambda s: bool(set(s.split(";")) & algorithms))
    shown = audit.loc[runs, ["subject", "kind", "case", "epsilon_claimed", "epsilon_lower", "verdict"]].copy()
    if "mutant" in audit:
        mutations = mutation_table(audit)
        scores = {}
        for name in {a.split(";")[0] for a in audit.loc[runs, "algorithms"].fillna("")}:
            caught, total = mutation_score(mutations[mutations["algorithm"] == name])
            scores[name] = f"{caught}/{total}" if total else ""
        shown["mutants caught"] = audit.loc[runs, "algorithms"].fillna("").map(lambda a: scores[a.split(";")[0]])
    return shown


@dataclass
class Section:
    key: str
    title: str
    card: PaperCard
    deviations: pd.DataFrame
    labels: pd.DataFrame
    audit: pd.DataFrame
    cells: int
    not_learning: pd.DataFrame

    def counts(self) -> dict:
        verdicts = self.card.claims["verdict"].value_counts()
        return {"paper": self.title, "published numbers compared": len(self.card.comparisons),
                **{f"claims {v}": int(verdicts.get(v, 0)) for v in VERDICTS},
                "cells not learning": f"{len(self.not_learning)} of {self.cells}",
                "deviations": len(self.deviations),
                "audit passes/caught": int(self.audit["verdict"].isin(["passes", "caught"]).sum()),
                "audit failures": int((~self.audit["verdict"].isin(["passes", "caught"])).sum())}


def build(spec: dict, tables: dict[str, dict[str, pd.DataFrame]], summaries: pd.DataFrame,
          audit: pd.DataFrame, docs: dict[str, str], makers: dict | None = None) -> list[Section]:
    """One section per paper of ``spec["papers"]`` (each ``{key, title, deviations,
    algorithms}``); ``tables[paper]`` are its plugin tables by name, ``makers[paper]`` the
    plugin's ``scorecard(tables) -> PaperCard`` (a paper without one compares nothing)."""
    headings = doc_headings(docs)
    sections = []
    for entry in spec["papers"]:
        key = entry["key"]
        make = (makers or {}).get(key)
        card = checked(key, make(tables.get(key, {})) if make else
                       PaperCard(note="The plugin compares no published numbers and checks no claims."))
        ours = summaries[summaries["paper"] == key] if len(summaries) else summaries
        stuck = ours[ours["learns"] == NO] if "learns" in ours else ours.iloc[0:0]
        sections.append(Section(key, entry["title"], card, deviations(key, entry["deviations"], headings),
                                labels(ours) if len(ours) else pd.DataFrame(),
                                audit_for(audit, set(entry["algorithms"])), len(ours),
                                _not_learning_rows(stuck)))
    return sections


def _not_learning_rows(stuck: pd.DataFrame) -> pd.DataFrame:
    columns = ["experiment", "dataset", "model", "label", "setting", "accuracy", "majority rate", "positive share"]
    if stuck.empty:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame({"experiment": stuck["experiment"], "dataset": stuck["dataset"], "model": stuck["model"],
                         "label": stuck["label"], "setting": stuck["setting"].astype(str),
                         "accuracy": stuck["accuracy_mean"], "majority rate": stuck["majority_rate_mean"],
                         "positive share": stuck["positive_share_mean"]})


# -- rendering ---------------------------------------------------------------------------------------

def _fmt(value) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.4g}"
    return str(value)


def _md_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_none_\n"
    head = "| " + " | ".join(frame.columns) + " |\n|" + "---|" * len(frame.columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(v).replace("|", "\\|").replace("\n", " ") for v in row) + " |\n"
                   for row in frame.itertuples(index=False))
    return head + body


def _comparisons(card: PaperCard) -> pd.DataFrame:
    return card.comparisons[["source", "item", "published", "ours", "ours_ci95", "ratio", "note"]].rename(
        columns={"ours_ci95": "ours ±95%", "ratio": "ours/published"})


def _intro(spec: dict) -> list[str]:
    lines = ["Generated from the results by `snakemake` (rule `scorecard`); do not edit. Each paper: every "
             "published number we compare with beside ours and their ratio, every claim with its verdict "
             "(supported, not supported, inconclusive, not tested), the test that decided it and the numbers "
             "(claims marked 'ours' are this project's, not the paper's), the cells that do not learn, every "
             "deviation from the paper (docs/deviations.md, docs/privacy.md), the privacy labels its records "
             "carry, and the black-box audit of every algorithm it runs (claimed ε against the audit's 95% lower "
             "bound ε_LB).",
             f"The learning guard: {RULE}. A claim whose verdict would rest on such a cell (the method's, its "
             "comparator's or the non-private reference's) is inconclusive, never supported or not supported."]
    if spec.get("quick"):
        lines.append("QUICK RUN: reduced grids and protocols; numbers here are a smoke test, not the reproduction.")
    audit = spec.get("audit", {})
    if audit.get("scale", 1.0) < 1.0:
        lines.append(f"Reduced audit: {audit['scale']:g} of every case's runs; a control not caught at this scale "
                     "shows lack of power, not a leak (the full audit: `snakemake --cores 2 audit`).")
    return lines


AUDIT_COLUMNS = ["subject", "kind", "expected", "case", "epsilon_claimed", "epsilon_lower", "verdict"]
AUDIT_TITLE = "Privacy audit: every subject (algorithms, reference variants, mutants)"


def to_markdown(spec: dict, sections: list[Section], audit: pd.DataFrame, docs_link: str = "docs") -> str:
    """The scorecard as Markdown; ``docs_link`` is the docs directory relative to the file."""
    out = ["# Reproduction scorecard", "", *(line + "\n" for line in _intro(spec)), "## Overview", "",
           _md_table(pd.DataFrame([s.counts() for s in sections]))]
    for s in sections:
        out += [f"## {s.title} (`{s.key}`)", ""]
        if s.card.note:
            out += [s.card.note, ""]
        out += ["### Published numbers beside ours", "", _md_table(_comparisons(s.card)),
                "### Claims", "", _md_table(s.card.claims),
                f"### Cells that do not learn ({len(s.not_learning)} of {s.cells})", "",
                _md_table(s.not_learning),
                "### Deviations from the paper", ""]
        out += [f"* [{h}]({docs_link}/{link.removeprefix('docs/')})"
                for link, h in s.deviations.itertuples(index=False)] or ["_none declared_"]
        out += ["", "### Labels on the records (cells per experiment)", "", _md_table(s.labels),
                "### Privacy audit of the algorithms it runs", "", _md_table(s.audit)]
    out += [f"## {AUDIT_TITLE}", "", _md_table(audit[AUDIT_COLUMNS])]
    return "\n".join(out) + "\n"


def _html_table(frame: pd.DataFrame, open_: bool = True, summary: str = "") -> str:
    if frame.empty:
        return "<p><em>none</em></p>"
    table = frame.to_html(index=False, escape=True, na_rep="", float_format=lambda v: f"{v:.4g}", border=0,
                          classes="scorecard")
    if len(frame) <= 12 or open_:
        return table
    return f"<details><summary>{html.escape(summary)} ({len(frame)} rows)</summary>{table}</details>"


def to_html(spec: dict, sections: list[Section], audit: pd.DataFrame) -> str:
    style = ("<style>table.scorecard{border-collapse:collapse;font-size:90%;margin-bottom:1em}"
             "table.scorecard td,table.scorecard th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             "</style>")
    out = [style, "<h2>Reproduction scorecard</h2>", *(f"<p>{html.escape(line)}</p>" for line in _intro(spec)),
           "<h3>Overview</h3>", _html_table(pd.DataFrame([s.counts() for s in sections]))]
    for s in sections:
        out.append(f"<h3>{html.escape(s.title)} (<code>{html.escape(s.key)}</code>)</h3>")
        if s.card.note:
            out.append(f"<p>{html.escape(s.card.note)}</p>")
        out += ["<h4>Published numbers beside ours</h4>",
                _html_table(_comparisons(s.card), open_=False, summary="published numbers"),
                "<h4>Claims</h4>", _html_table(s.card.claims, open_=False, summary="claims"),
                f"<h4>Cells that do not learn ({len(s.not_learning)} of {s.cells})</h4>",
                _html_table(s.not_learning, open_=False, summary="cells that do not learn"),
                "<h4>Deviations from the paper</h4>",
                "<ul>" + "".join(f"<li>{html.escape(h)} (<code>{html.escape(link)}</code>)</li>"
                                 for link, h in s.deviations.itertuples(index=False)) + "</ul>"
                if len(s.deviations) else "<p><em>none declared</em></p>",
                "<h4>Labels on the records (cells per experiment)</h4>", _html_table(s.labels),
                "<h4>Privacy audit of the algorithms it runs</h4>",
                _html_table(s.audit, open_=False, summary="audit cases")]
    out += [f"<h3>{html.escape(AUDIT_TITLE)}</h3>", _html_table(audit[AUDIT_COLUMNS], open_=False, summary="all cases")]
    return "\n".join(out) + "\n"
