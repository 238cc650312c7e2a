"""The audit's table and figure: every subject's claimed ε beside the lower bound the audit found."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .captions import with_quick_note
from .figures import legend_and_caption, save_figure
from .tables import write_table

NOTE = ("Black-box privacy audit (dperm.audit): for every registered private algorithm, every reference "
        "variant and mutants built to be caught, releases on neighbouring data sets built to show the differing "
        "row (a canary on a coordinate no other row uses, an extreme score for a selection, a displaced row for a "
        "fixed-size batch), a threshold chosen on half the runs and a 95% Clopper-Pearson lower bound epsilon_lower "
        "on the other half (hockey-stick form at the case's delta). A correct algorithm passes when epsilon_lower <= "
        "its claimed epsilon; every reference variant registered as not DP as implemented and every mutant must be "
        "caught (epsilon_lower > claimed). A bound of 0 proves nothing about an algorithm: it says the case did not "
        "distinguish the neighbours.")


def audit_table(rows: pd.DataFrame) -> pd.DataFrame:
    order = {"mutant": 2, "reference": 1, "algorithm": 0}
    table = rows.sort_values(["kind", "subject", "case"], key=lambda s: s.map(order) if s.name == "kind" else s)
    return table.reset_index(drop=True)


def write_audit(rows: pd.DataFrame, csv, md, png, pdf, quick: bool = False, html=None) -> pd.DataFrame:
    import matplotlib.pyplot as plt

    table = audit_table(rows)
    shown = table[["subject", "kind", "expected", "case", "adjacency", "epsilon_claimed", "delta", "runs",
                   "epsilon_lower", "verdict", "algorithms"]]
    failures = table[~table["verdict"].isin(["passes", "caught"])]
    summary = (f" Result: {len(table)} cases; {int((table['verdict'] == 'passes').sum())} pass, "
               f"{int((table['verdict'] == 'caught').sum())} controls caught, {len(failures)} failures"
               + (f" ({', '.join(failures['subject'])})." if len(failures) else "."))
    write_table(shown, csv, md, with_quick_note(NOTE + summary, quick), floatfmt=".4g", html_path=html)
    counts = table["subject"].value_counts()
    labels = [f"{s} · {c}" if counts[s] > 1 else s for s, c in zip(table["subject"], table["case"])]
    y = np.arange(len(table))
    fig, ax = plt.subplots(figsize=(9.5, 0.34 * len(table) + 1.8))
    colours = {"passes": "tab:blue", "caught": "tab:green"}
    ax.barh(y, table["epsilon_lower"], color=[colours.get(v, "tab:red") for v in table["verdict"]], alpha=0.8)
    ax.scatter(table["epsilon_claimed"], y, marker="|", s=180, color="black", zorder=3, label="claimed ε")
    ax.set_yticks(y, labels, fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlabel("ε")
    ax.grid(alpha=0.3, axis="x", lw=0.5)
    from matplotlib.patches import Patch

    handles = [Patch(color="tab:blue", label="correct: bound ≤ claim (passes)"),
               Patch(color="tab:green", label="not DP: bound > claim (caught)"),
               Patch(color="tab:red", label="failure"), ax.collections[0]]
    ax.legend(handles=handles, loc="lower right", fontsize=7.5)
    ax.collections[0].set_label(None)  # one legend, in the panel
    title = ("[quick run] " if quick else "") + "Privacy audit: claimed ε against the audit's lower bound"
    caption = with_quick_note("Bars: the 95% lower bound on ε each case found; ticks: the ε the subject claims. "
                              "Blue bars must stay left of their tick, green ones (reference variants that are not "
                              "DP as implemented, mutants) must cross it." + summary, quick)
    legend_and_caption(fig, np.array([[ax]]), title, caption, ncol=4)
    save_figure(fig, png, pdf)
    return table
