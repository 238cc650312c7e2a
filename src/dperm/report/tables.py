"""Aggregation of run records into tables: mean, standard deviation, 95% CI and n per cell.

The confidence interval is a t-interval for the mean over a cell's fits (folds × repeats ×
draws), treating the fits as independent; fits of one fold share their training rows, so the
interval is an approximation and is labelled as such in every table.
"""

from __future__ import annotations

import pandas as pd

from ..files import write_text_atomic
from .guard import CONDITION, NA, NO, YES, learns_column
from .stats import mean_pm, t_interval

# A cell's labels: a summary row never pools fits that differ in one (a data-dependent cell is
# never averaged with a public-bounds one, a tuned with an untuned one).
KEYS = ["paper", "experiment", "dataset", "model", "algorithm", "label", "variant", "setting", "sweep",
        "tuning", "preprocessing", "dp_as_implemented"]
METRICS = ["accuracy", "majority_rate", "positive_share", "test_loss", "objective", "opt_gap", "excess_risk",
           "epsilon_spent", "fit_seconds", "grad_evals"]
CI_NOTE = ("mean ± 95% t-interval half-width over the fits of a cell (folds × repeats × draws, "
           "treated as independent; fits of one fold share their training rows)")


def summarise(records: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """One row per cell; for each metric ``<m>_mean``, ``<m>_std``, ``<m>_ci95``, ``<m>_n``; and
    ``learns``, the learning guard's verdict (:mod:`.guard`: yes, no, n/a). A metric the records
    lack (records of an older dperm) is left out."""
    rows = []
    records = records.assign(sweep=records["sweep"].fillna(""))
    metrics = [m for m in metrics if m in records]
    for key, group in records.groupby(KEYS, sort=False, dropna=False):
        row = dict(zip(KEYS, key))
        row["epsilon"] = group["epsilon"].iloc[0]
        for m in metrics:
            interval = t_interval(group[m].to_numpy(dtype=float))
            row.update({f"{m}_mean": interval.mean, f"{m}_std": interval.std, f"{m}_ci95": interval.half,
                        f"{m}_n": interval.n})
        rows.append(row)
    summary = pd.DataFrame(rows)
    summary["learns"] = learns_column(summary)
    return summary


def _cell(mean, half, digits=4):
    return mean_pm(mean, half, digits=digits)


def shown_summary(summary: pd.DataFrame, metrics=("accuracy", "objective", "opt_gap", "epsilon_spent"),
                  title: str = "") -> tuple[str, pd.DataFrame]:
    """(the note above it, the frame shown) of a summary's readable view: a metric no cell has
    (e.g. opt_gap where L* is not solved) is left out rather than shown as an empty column."""
    metrics = [m for m in metrics if summary[f"{m}_mean"].notna().any()] or list(metrics[:1])
    shown = summary[["dataset", "model", "label", "setting", "tuning", "preprocessing"]].copy()
    for m in metrics:
        shown[m] = [_cell(a, b) for a, b in zip(summary[f"{m}_mean"], summary[f"{m}_ci95"])]
    shown["n"] = summary[f"{metrics[0]}_n"]
    if "learns" in summary and (summary["learns"] != NA).any():
        shown["learns"] = summary["learns"].map({NO: "NO", YES: "yes"}).fillna("")
    head = (f"## {title}\n\n" if title else "") + f"Values: {CI_NOTE}. learns: NO when {CONDITION}."
    return head, shown


def markdown(summary: pd.DataFrame, metrics=("accuracy", "objective", "opt_gap", "epsilon_spent"),
             title: str = "") -> str:
    """The summary as Markdown (:func:`shown_summary`)."""
    head, shown = shown_summary(summary, metrics, title)
    return head + "\n\n" + shown.to_markdown(index=False) + "\n"


def write_summary(records: pd.DataFrame, csv_path, md_path, title: str = "", note: str = "",
                  html_path=None) -> pd.DataFrame:
    """The summary of ``records`` as CSV, as Markdown and (``html_path``) as an HTML page for the
    report, ``note`` above the table."""
    summary = summarise(records)
    head, shown = shown_summary(summary, title=title)
    note = (note.strip() + "\n\n" if note.strip() else "") + head
    write_table(summary, csv_path, md_path, note, shown=shown, html_path=html_path, floatfmt="g")
    return summary


def write_table(frame: pd.DataFrame, csv_path, md_path, note: str, floatfmt: str = ".5g",
                shown: pd.DataFrame | None = None, html_path=None) -> None:
    """A table as CSV (``frame``, every column) and as Markdown with a note above it (``shown``,
    a narrower or formatted view where given; empty cells where a value is unknown), and, with
    ``html_path``, as the HTML page the report shows (:func:`dperm.report.html.table_page`)."""
    from pathlib import Path

    from .html import table_page

    write_text_atomic(csv_path, frame.to_csv(index=False))
    shown = frame if shown is None else shown
    shown = shown.astype(object).where(shown.notna(), "")
    write_text_atomic(md_path, note.strip() + "\n\n" + shown.to_markdown(index=False, floatfmt=floatfmt) + "\n")
    if html_path is not None:
        write_text_atomic(html_path, table_page(shown, note, floatfmt=floatfmt, csv_name=Path(csv_path).name))


def read_records(paths) -> pd.DataFrame:
    """Run records of several cell files as one frame (empty strings stay empty, not NaN)."""
    return pd.concat([pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths], ignore_index=True)
