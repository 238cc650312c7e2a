"""The audit's tables and figure: every case's claimed ε beside its lower bound (the audit table),
every mutant of every algorithm with its verdict (the mutation table), and per algorithm its
tightness and mutation score (the summary)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .captions import with_quick_note
from .figures import legend_and_caption, save_figure
from .tables import write_table

NOTE = ("Privacy audit (dperm.audit, docs/audit.md): for every registered private algorithm, its mutants (built from "
        "its own calibration: half the noise, the sensitivity halved, a wrong adjacency, and the ones it declares), "
        "every reference variant and the controls, releases on neighbouring data sets built to move the release by "
        "the sensitivity its noise is sized for (white box where the noise law is known), a threshold chosen on half "
        "the runs and a 95% Clopper-Pearson lower bound epsilon_lower on the other half (hockey-stick form at the "
        "case's delta). A correct algorithm passes when epsilon_lower <= its claim; tightness = epsilon_lower / "
        "claim; achieved_ratio = the shift of the noiseless release between the neighbours over the sensitivity the "
        "noise is calibrated to (where the case declares it). A mutant or reference variant is caught when "
        "epsilon_lower > claim; one not caught says why (reason) and about how many runs the chosen event would "
        "need (runs_needed; inf: none). A bound of 0 proves nothing about an algorithm.")
MUTATION_NOTE = ("Mutation table: every mutant of every audited algorithm, its largest epsilon_lower over the cases "
                 "it ran (a mutant stops at the first case that catches it), caught or not, and why not. A mutant "
                 "marked 'same release as half noise' has a calibration linear in the sensitivity and shares the "
                 "half-noise mutant's verdict; 'not applicable' means the fault reaches no calibration of the "
                 "algorithm (its noise is a multiplier of the clip). The score counts the distinct mutants.")
SUMMARY_NOTE = ("Per algorithm: the best tightness (epsilon_lower / claim) of its cases, the achieved ratio of that "
                "case, and its mutation score (distinct mutants caught / distinct mutants). A pass is evidence "
                "only in proportion to the mutants the same cases catch.")
DISTINCT_EXCLUDED = ("same release as half noise", "not applicable")


#: a correct algorithm's case whose achieved ratio is below this says so in its row
SHORT_RATIO = 0.9
#: columns the audit runner writes beyond the first ones (rows from an older runner lack them)
LATER_COLUMNS = ("mutant", "factor", "caught", "reason", "runs_needed", "tightness", "achieved_ratio")


def audit_table(rows: pd.DataFrame) -> pd.DataFrame:
    order = {"mutant": 2, "reference": 1, "algorithm": 0}
    rows = rows.copy()
    for column in LATER_COLUMNS:
        if column not in rows:
            rows[column] = "" if column in ("mutant", "caught", "reason") else math.nan
    table = rows.sort_values(["kind", "subject", "case"], key=lambda s: s.map(order) if s.name == "kind" else s)
    table = table.reset_index(drop=True)
    # a case whose noiseless releases move by much less than the noise is sized for says so
    short = (table["expected"] == "private") & (table["achieved_ratio"] < SHORT_RATIO) \
        & ~table["reason"].fillna("").astype(str).str.len().gt(0)
    table["reason"] = table["reason"].astype(object)
    table.loc[short, "reason"] = table.loc[short, "achieved_ratio"].map(
        lambda r: f"the case moves the release by {r:.2f} of the sensitivity the noise is sized for: its bound "
                  "sees at most that share of the claim")
    return table


def _base(row) -> str:
    """The registered algorithm a row audits ('' for a control of a mechanism)."""
    names = str(row["algorithms"]) if isinstance(row["algorithms"], str) else ""
    return names.split(";")[0] if names else ""


def mutation_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per mutant of a registered algorithm: its verdict over the cases it ran."""
    mutants = table[(table["kind"] == "mutant") & table["mutant"].astype(object).fillna("").astype(bool)]
    out = []
    for subject, rows in mutants.groupby("subject", sort=False):
        first = rows.iloc[0]
        caught = rows[rows["verdict"] == "caught"]
        skipped = rows["verdict"].isin(DISTINCT_EXCLUDED).all()
        twin = (rows["verdict"] == DISTINCT_EXCLUDED[0]).any()  # the same releases as half noise on some case
        verdict = ("caught" if len(caught) else (DISTINCT_EXCLUDED[0] if twin else DISTINCT_EXCLUDED[1]) if skipped
                   else "NOT CAUGHT")
        best = rows["epsilon_lower"].max()
        shown = caught.iloc[0] if len(caught) else rows.loc[rows["epsilon_lower"].fillna(-1).idxmax()]
        needed = rows["runs_needed"].min() if verdict == "NOT CAUGHT" else math.nan
        out.append({"algorithm": _base(first), "mutant": first["mutant"], "factor": first["factor"],
                    "epsilon_claimed": shown["epsilon_claimed"], "epsilon_lower": best, "verdict": verdict,
                    "case": shown["case"] if not skipped else "", "reason": "" if len(caught) else shown["reason"],
                    "runs_needed": needed, "subject": subject, "algorithms": first["algorithms"]})
    frame = pd.DataFrame(out, columns=["algorithm", "mutant", "factor", "epsilon_claimed", "epsilon_lower", "verdict",
                                       "case", "reason", "runs_needed", "subject", "algorithms"])
    return frame.sort_values(["algorithm", "mutant"]).reset_index(drop=True)


def mutation_score(mutations: pd.DataFrame) -> tuple[int, int]:
    """(distinct mutants caught, distinct mutants)."""
    distinct = mutations[~mutations["verdict"].isin(DISTINCT_EXCLUDED)]
    return int((distinct["verdict"] == "caught").sum()), len(distinct)


def summary_table(table: pd.DataFrame, mutations: pd.DataFrame) -> pd.DataFrame:
    """Per registered algorithm: its best tightness, that case's achieved ratio, its score."""
    out = []
    for name in sorted({_base(r) for _, r in table.iterrows()} - {""}):
        own = table[table["subject"] == name]
        mine = mutations[mutations["algorithm"] == name]
        caught, total = mutation_score(mine)
        best = own.loc[own["tightness"].fillna(-1).idxmax()] if own["tightness"].notna().any() else None
        verdicts = own["verdict"].value_counts()
        out.append({"algorithm": name, "expected": own["expected"].iloc[0] if len(own) else "", "cases": len(own),
                    "verdicts": ", ".join(f"{k} {v}" for k, v in verdicts.items()),
                    "tightness": best["tightness"] if best is not None else math.nan,
                    "best_case": best["case"] if best is not None else "",
                    "achieved_ratio": best["achieved_ratio"] if best is not None else math.nan,
                    "mutants_caught": caught, "mutants": total,
                    "not_caught": "; ".join(mine.loc[mine["verdict"] == "NOT CAUGHT", "mutant"])})
    return pd.DataFrame(out)


#: the audit table's Markdown columns (the CSV keeps every column)
SHOWN = ["subject", "kind", "expected", "case", "adjacency", "epsilon_claimed", "delta", "runs", "epsilon_lower",
         "tightness", "achieved_ratio", "verdict", "reason", "runs_needed", "algorithms"]


def failures(table: pd.DataFrame) -> pd.DataFrame:
    """Rows that fail the audit: a correct algorithm above its claim, a control not caught, a
    mutant caught on none of its cases and not caught without a stated reason (the rule of
    dperm.audit.audit_ok, on the table)."""
    caught = set(table.loc[table["verdict"] == "caught", "subject"])
    excused = ((table["verdict"] == "NOT CAUGHT") & (table["kind"] == "mutant")
               & (table["subject"].isin(caught) | table["reason"].fillna("").astype(str).str.len().gt(0)))
    return table[~table["verdict"].isin(["passes", "caught", *DISTINCT_EXCLUDED]) & ~excused]


def write_audit(rows: pd.DataFrame, csv, md, png, pdf, quick: bool = False, mutation=None,
                summary=None, html=None) -> pd.DataFrame:
    """The audit table (csv, md and, with ``html``, the page the report shows), the mutation
    table and the summary (each a (csv, md) or (csv, md, html) tuple, if given) and the figure;
    returns the audit table."""
    table = audit_table(rows)
    failed = failures(table)
    mutations = mutation_table(table)
    caught, total = mutation_score(mutations)
    summary_text = (f" Result: {len(table)} cases; {int((table['verdict'] == 'passes').sum())} pass, "
                    f"{int((table['verdict'] == 'caught').sum())} controls and mutants caught; mutation score "
                    f"{caught}/{total}; {len(failed)} failures"
                    + (f" ({', '.join(failed['subject'])})." if len(failed) else "."))
    # the CSV keeps every column, the Markdown and HTML show SHOWN
    write_table(table, csv, md, with_quick_note(NOTE + summary_text, quick), floatfmt=".4g", shown=table[SHOWN],
                html_path=html)
    summary_frame = summary_table(table, mutations)
    if mutation is not None:
        write_table(mutations, *mutation[:2], with_quick_note(MUTATION_NOTE + f" Score: {caught}/{total}.", quick),
                    floatfmt=".4g", html_path=mutation[2] if len(mutation) > 2 else None)
    if summary is not None:
        write_table(summary_frame, *summary[:2], with_quick_note(SUMMARY_NOTE, quick), floatfmt=".3g",
                    html_path=summary[2] if len(summary) > 2 else None)
    _figure(summary_frame, mutations, table, png, pdf, quick, summary_text)
    return table


def _figure(summary: pd.DataFrame, mutations: pd.DataFrame, table: pd.DataFrame, png, pdf, quick, summary_text):
    """Per algorithm: its best ε_LB/ε (tightness) and each mutant's ε_LB/ε, against the claim at 1."""
    import matplotlib.pyplot as plt

    names = list(summary["algorithm"])
    y = {name: i for i, name in enumerate(names)}
    fig, ax = plt.subplots(figsize=(9.5, 0.32 * len(names) + 2.2))
    ax.axvline(1.0, color="black", lw=1, label="claimed ε")
    ax.scatter(summary["tightness"].fillna(0), [y[n] for n in names], marker="o", color="tab:blue", zorder=3,
               label="correct: best ε_LB / ε")
    for verdict, colour, label in (("caught", "tab:green", "mutant caught"), ("NOT CAUGHT", "tab:red",
                                                                                "mutant not caught")):
        rows = mutations[(mutations["verdict"] == verdict) & mutations["algorithm"].isin(y)]
        ratio = (rows["epsilon_lower"] / rows["epsilon_claimed"]).clip(upper=3.0)
        ax.scatter(ratio, [y[n] for n in rows["algorithm"]], marker="x" if verdict == "caught" else "D",
                   color=colour, zorder=3, label=label)
    ax.set_yticks(np.arange(len(names)), names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ε_LB / claimed ε (mutants clipped at 3)")
    ax.set_xlim(-0.05, 3.1)
    ax.grid(alpha=0.3, axis="x", lw=0.5)
    title = ("[quick run] " if quick else "") + "Privacy audit: tightness and mutants per algorithm"
    caption = with_quick_note("Blue: the largest ε_LB/ε a correct algorithm's cases reach (must stay left of 1); "
                              "green: a mutant caught (right of 1); red: a mutant not caught (the mutation table "
                              "says why)." + summary_text, quick)
    legend_and_caption(fig, np.array([[ax]]), title, caption, ncol=4)
    save_figure(fig, png, pdf)


ONE_RUN_NOTE = ("One-run audits (dperm.audit_one_run, docs/audit.md#one-run): DP-SGD and DP-GD at Lowy & "
                "Razaviyayn's scale on Adult (36,177 rows, their hyper-parameters, delta = 1e-10), 1,000 Dirac "
                "canaries each in the data with probability 1/2, one training run per row; epsilon_lower_steinke "
                "is the 95% bound of Steinke, Nasr & Jagielski 2023 against (epsilon, delta)-DP, "
                "epsilon_lower_gdp the f-DP variant (Mahloujifar et al. 2024) against mu-GDP, reported as the "
                "epsilon of that mu at delta. The half-noise mutant is DP-SGD with every noise scale halved.")
CALIBRATION_NOTE = ("Calibration of the one-run estimators on Gaussian scores (in-canaries N(mu, 1), out N(0, 1), fair "
                    "coins): the scores of a mu-GDP mechanism with independent canaries, whose epsilon at delta = 1e-5 "
                    "is known exactly; ratio = epsilon_lower / epsilon.")


def write_one_run(runs: pd.DataFrame, calibration: pd.DataFrame, csv, md, calibration_csv, calibration_md,
                  quick: bool = False, html=None) -> None:
    """The one-run audits (CSV, Markdown and, with ``html``, the page the report shows) and the
    estimators' calibration (CSV and Markdown)."""
    write_table(runs, csv, md, with_quick_note(ONE_RUN_NOTE, quick), floatfmt=".4g", html_path=html)
    write_table(calibration, calibration_csv, calibration_md, with_quick_note(CALIBRATION_NOTE, quick),
                floatfmt=".4g")
