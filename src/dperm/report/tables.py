"""Aggregation of run records into tables: mean, standard deviation, 95% CI and n per cell.

The confidence interval is a t-interval for the mean over a cell's fits (folds × repeats ×
draws), treating the fits as independent; fits of one fold share their training rows, so the
interval is an approximation and is labelled as such in every table.
"""

from __future__ import annotations

import pandas as pd

from ..files import write_text_atomic
from .stats import mean_pm, t_interval

# A cell's labels: a summary row never pools fits that differ in one (a data-dependent cell is
# never averaged with a public-bounds one, a tuned with an untuned one).
KEYS = ["paper", "experiment", "dataset", "model", "algorithm", "label", "variant", "setting", "sweep",
        "tuning", "preprocessing", "dp_as_implemented"]
METRICS = ["accuracy", "test_loss", "objective", "opt_gap", "excess_risk", "epsilon_spent", "fit_seconds", "grad_evals"]
CI_NOTE = ("mean ± 95% t-interval half-width over the fits of a cell (folds × repeats × draws, "
           "treated as independent; fits of one fold share their training rows)")


def summarise(records: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """One row per cell; for each metric ``<m>_mean``, ``<m>_std``, ``<m>_ci95``, ``<m>_n``."""
    rows = []
    records = records.assign(sweep=records["sweep"].fillna(""))
    for key, group in records.groupby(KEYS, sort=False, dropna=False):
        row = dict(zip(KEYS, key))
        row["epsilon"] = group["epsilon"].iloc[0]
        for m in metrics:
            interval = t_interval(group[m].to_numpy(dtype=float))
            row.update({f"{m}_mean": interval.mean, f"{m}_std": interval.std, f"{m}_ci95": interval.half,
                        f"{m}_n": interval.n})
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(mean, half, digits=4):
    return mean_pm(mean, half, digits=digits)


def markdown(summary: pd.DataFrame, metrics=("accuracy", "objective", "opt_gap", "epsilon_spent"),
             title: str = "") -> str:
    """The summary as Markdown; a metric no cell has (e.g. opt_gap where L* is not solved) is
    left out rather than shown as an empty column."""
    metrics = [m for m in metrics if summary[f"{m}_mean"].notna().any()] or list(metrics[:1])
    shown = summary[["dataset", "model", "label", "setting", "tuning", "preprocessing"]].copy()
    for m in metrics:
        shown[m] = [_cell(a, b) for a, b in zip(summary[f"{m}_mean"], summary[f"{m}_ci95"])]
    shown["n"] = summary[f"{metrics[0]}_n"]
    head = (f"## {title}\n\n" if title else "") + f"Values: {CI_NOTE}.\n\n"
    return head + shown.to_markdown(index=False) + "\n"


def write_summary(records: pd.DataFrame, csv_path, md_path, title: str = "", note: str = "") -> pd.DataFrame:
    """The summary of ``records`` as CSV and as Markdown (``note`` above the table)."""
    summary = summarise(records)
    write_text_atomic(csv_path, summary.to_csv(index=False))
    write_text_atomic(md_path, (note.strip() + "\n\n" if note.strip() else "") + markdown(summary, title=title))
    return summary


def add_output_arguments(parser, outputs=("csv", "md")) -> None:
    """The output options every table verb of a paper's CLI takes: one required path per output
    and ``--quick`` (the note then says it is a quick run)."""
    for output in outputs:
        parser.add_argument(f"--{output}", required=True)
    parser.add_argument("--quick", action="store_true", help="say in the note that this is a quick run")


def write_table(frame: pd.DataFrame, csv_path, md_path, note: str, floatfmt: str = ".5g") -> None:
    """A table as CSV and as Markdown with a note above it (empty cells where a value is unknown)."""
    write_text_atomic(csv_path, frame.to_csv(index=False))
    shown = frame.astype(object).where(frame.notna(), "")
    write_text_atomic(md_path, note.strip() + "\n\n" + shown.to_markdown(index=False, floatfmt=floatfmt) + "\n")


def read_records(paths) -> pd.DataFrame:
    """Run records of several cell files as one frame (empty strings stay empty, not NaN)."""
    return pd.concat([pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths], ignore_index=True)
