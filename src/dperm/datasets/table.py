"""The dataset table (``results/tables/datasets.csv`` and ``.md``): the analogue of the papers'
dataset tables, with the papers' own n and dimension beside ours.

Columns: dataset, task, n, n_features (after encoding, bias excluded), p (model coordinates, bias
included), label, positive_rate, n_raw, n_dropped_missing, source, status, then per paper plugin
``<paper>_n`` and ``<paper>_dim`` as the paper reports them (dim includes a bias where the paper's
does). A dataset that could not be had is listed with status ``unavailable: ...`` and empty counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .registry import DATASETS

BASE_COLUMNS = ["dataset", "task", "n", "n_features", "p", "label", "positive_rate", "n_raw",
                "n_dropped_missing", "source", "status"]


def dataset_rows(provenance_files, unavailable: dict[str, str],
                 shapes: dict[str, dict[str, tuple]] | None = None) -> pd.DataFrame:
    """One row per dataset, then ``<paper>_n``/``<paper>_dim`` for every paper of ``shapes``
    (paper -> {dataset: (n, dim)} as the paper reports them: :func:`dperm.papers.dataset_shapes`)."""
    shapes = shapes or {}
    columns = BASE_COLUMNS + [f"{p}_{k}" for p in shapes for k in ("n", "dim")]
    rows = []
    for path in provenance_files:
        prov = json.loads(Path(path).read_text())
        rows.append({
            "dataset": prov["dataset"], "task": prov["task"], "n": prov["n"],
            "n_features": prov["n_features"], "p": prov["p"], "label": prov["label"],
            "positive_rate": prov.get("positive_rate"), "n_raw": prov["n_raw"],
            "n_dropped_missing": prov["n_dropped_missing"], "source": prov["source"]["kind"],
            "status": "ok",
        })
    for key, reason in unavailable.items():
        rows.append({"dataset": key, "task": DATASETS[key].task, "label": DATASETS[key].label,
                     "status": reason})
    table = pd.DataFrame(rows).reindex(columns=columns)
    for i, key in enumerate(table["dataset"]):
        for paper, sizes in shapes.items():
            if key in sizes:
                table.loc[i, f"{paper}_n"], table.loc[i, f"{paper}_dim"] = sizes[key]
    order = {k: i for i, k in enumerate(DATASETS)}
    table = table.sort_values("dataset", key=lambda s: s.map(order)).reset_index(drop=True)
    counts = ["n", "n_features", "p", "n_raw", "n_dropped_missing"]
    for col in counts + [c for c in columns if c.endswith(("_n", "_dim"))]:
        table[col] = table[col].astype("Int64")
    return table


def shown_dataset_table(table: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """(the note above it, the frame shown) of the dataset table's readable view."""
    shown = table.copy()
    shown["positive_rate"] = shown["positive_rate"].map(lambda v: "" if pd.isna(v) else f"{100 * v:.2f}%")
    note = ("Dataset characteristics. n and n_features are ours (n_features excludes the bias column; "
            "p includes it); `<paper>_n` / `<paper>_dim` are what each paper reports (empty where it "
            "gives no number). Encodings differ from the papers' where docs/deviations.md#data-sources "
            "says so.")
    return note, shown
