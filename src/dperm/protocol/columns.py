"""The record columns (one row per fit) and the rows of one fit.

Every record also carries the fit's hyper-parameters and the algorithm's ``extra`` as JSON
(:mod:`dperm.records`), and the ``preprocessing`` label of the prepared arrays it ran on.
"""

from __future__ import annotations

from .. import __version__
from .metrics import per_draw
from .seeds import cell_algorithm
from .settings import parse_setting

RECORD_COLUMNS = [
    "paper", "experiment", "dataset", "model", "algorithm", "variant", "label", "setting", "sweep",
    "epsilon", "delta", "epsilon_spent", "delta_spent", "adjacency", "fold", "repeat", "draw", "seed",
    "accuracy", "majority_rate", "positive_share", "test_loss", "objective", "regularised_objective", "opt_gap",
    "excess_risk", "fit_seconds",
    "grad_evals", "iterations", "n_train", "n_test", "p", "tuning", "preprocessing", "dp_as_implemented",
    "accounting", "notes", "hyper", "extra", "dperm_version",
]


def fit_records(spec, algo, privacy, setting, result, split, seed, elapsed, metrics, p, hyper,
                preprocessing, measured: dict | None = None) -> list[dict]:
    """One record per draw of ``result`` (a fit of ``spec`` on ``split``, at privacy ``setting``,
    with hyper-parameters ``hyper``, on arrays whose preprocessing label is ``preprocessing``;
    ``metrics``: the per-draw measures, :func:`.metrics.fit_metrics` with opt_gap and excess_risk);
    ``measured``: what the cell's metric hooks measured (:mod:`.metric_hooks`), carried in
    ``extra`` beside what the algorithm reports."""
    from ..records import record_json

    extra = result.extra
    if measured:
        clash = sorted(set(measured) & set(extra))
        if clash:
            raise ValueError(f"metric hooks and algorithm {spec['algorithm']!r} both report {clash} in extra")
        extra = {**extra, **measured}

    seconds = result.seconds_per_draw if result.seconds_per_draw is not None else elapsed / result.draws
    eps_spent = per_draw(result.epsilon_spent, result.draws)
    evals, iters = per_draw(result.grad_evals, result.draws), per_draw(result.iterations, result.draws)
    return [{
        "paper": spec["paper"], "experiment": spec["experiment"], "dataset": spec["dataset"],
        "model": spec["model"]["name"], "algorithm": cell_algorithm(spec), "variant": algo.variant,
        "label": record_label(spec, algo), "setting": setting, "sweep": spec.get("sweep", ""),
        "epsilon": parse_setting(setting)[0], "delta": privacy.delta, "epsilon_spent": eps_spent[d],
        "delta_spent": result.delta_spent, "adjacency": result.adjacency,
        "fold": split.fold, "repeat": split.repeat, "draw": d, "seed": seed,
        "accuracy": metrics["accuracy"][d], "majority_rate": metrics["majority_rate"][d],
        "positive_share": metrics["positive_share"][d], "test_loss": metrics["test_loss"][d],
        "objective": metrics["objective"][d], "regularised_objective": metrics["regularised_objective"][d],
        "opt_gap": metrics["opt_gap"][d], "excess_risk": metrics["excess_risk"][d], "fit_seconds": seconds,
        "grad_evals": evals[d], "iterations": int(iters[d]), "n_train": len(split.train),
        "n_test": len(split.test), "p": p, "tuning": spec.get("tuning", "private"),
        "preprocessing": preprocessing,
        "dp_as_implemented": algo.dp_as_implemented if algo.private else "n/a", "accounting": result.accounting,
        "notes": "; ".join(result.notes),
        "hyper": hyper, "extra": record_json(extra, d, result.draws), "dperm_version": __version__,
    } for d in range(result.draws)]


def record_label(spec: dict, algo) -> str:
    """A cell's name in tables and legends: its config ``label`` when it has one, else the
    registered algorithm's; a reference variant keeps its registered label, which carries its
    caveat (docs/privacy.md)."""
    return (spec.get("label") or algo.label) if algo.variant != "reference" else algo.label
