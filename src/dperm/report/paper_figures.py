"""A paper's declared figures (its config's ``figures`` section) drawn from experiment summaries.

The figure spec (:func:`dperm.grid.figure_spec`) carries everything the drawing reads
from the configuration, so a figure is redrawn exactly when one of those values changes.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .captions import figure_caption


def figure_rows(spec: dict, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The rows a figure draws: its experiment's summary, with the algorithms it borrows
    (``borrow: {experiment: [algorithm, ...]}``) taken from those experiments' summaries
    instead. ``tables``: experiment -> its summary."""
    borrow = spec.get("borrow", {})
    missing = sorted({spec["experiment"], *borrow} - set(tables))
    if missing:
        raise ValueError(f"figure needs the summaries of {missing}; got {sorted(tables)}")
    taken = {a for algorithms in borrow.values() for a in algorithms}
    own = tables[spec["experiment"]]
    parts = [own[~own["algorithm"].isin(taken)]]
    for experiment, algorithms in borrow.items():
        rows = tables[experiment][tables[experiment]["algorithm"].isin(algorithms)]
        absent = sorted(set(algorithms) - set(rows["algorithm"]))
        if absent:
            raise ValueError(f"figure borrows {absent} from experiment {experiment!r}, "
                             f"whose summary has no rows for them")
        parts.append(rows)
    return pd.concat(parts, ignore_index=True)


def read_summaries(paths) -> dict[str, pd.DataFrame]:
    """Experiment summaries, each named by its file (``<experiment>.csv``)."""
    return {Path(p).stem: pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in paths}


def draw(spec: dict, summary_paths, png, pdf) -> None:
    """Draw the figure ``spec`` describes from the summaries at ``summary_paths``."""
    from . import figures

    summary = figure_rows(spec, read_summaries(summary_paths))
    borrowed = {e: (spec["borrowed_protocols"][e], algs) for e, algs in spec.get("borrow", {}).items()}
    caption = figure_caption(spec, summary, spec["protocol"], borrowed, quick=spec.get("quick", False))
    title = ("[quick run] " if spec.get("quick") else "") + spec.get("title", "")
    common = dict(title=title, caption=caption,
                  metrics=tuple(spec.get("metrics", ("accuracy", "objective"))))
    if spec["kind"] == "epsilon":
        model = spec.get("model", spec["experiment_models"][0])
        panels = ([(p["dataset"], p["model"]) for p in spec["panels"]] if "panels" in spec
                  else [(d, model) for d in spec.get("datasets", spec["experiment_datasets"])])
        fig = figures.epsilon_figure(summary, panels=panels,
                                     algorithms=spec.get("algorithms", spec["experiment_algorithms"]),
                                     unavailable=spec.get("unavailable", {}), labels=spec.get("labels"),
                                     palette=spec["palette"], pairs=spec.get("pairs"), **common)
    else:
        fig = figures.sweep_figure(summary, param=spec["param"], values=spec["sweep_values"],
                                   param_label=spec.get("param_label"), protocol=spec["protocol"], **common)
    figures.save_figure(fig, png, pdf)
