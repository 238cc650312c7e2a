"""Zhang, Zheng, Mou & Wang 2017, "Efficient Private ERM for Smooth Objectives" (IJCAI'17):
OutPert-GD against Bassily et al.'s noisy SGD. What the targets produce and how they differ from
the paper: docs/papers/zhang2017.md.

The grid (Table 3, RRPSGD on an MLP, the runtime runs) is ``config/papers/zhang2017.yaml``; this
package assembles Table 3 beside the published numbers (:mod:`.tables`), the claims check, the
error figure (:mod:`.plot`), the Table 2 analogue and the RRPSGD and runtime tables from the
cell records (:mod:`.runs`), declared in ``PRODUCTS``.
"""

from __future__ import annotations

TITLE = "Zhang et al. 2017: output-perturbation gradient descent"

# (n, d) as the paper's Table 2 gives them (d: the paper's dimension, bias excluded).
DATASET_SHAPES = {"adult": (32_561, 110), "bank": (45_211, 42), "wine": (6_497, 12), "bike": (17_379, 62),
                  "credit": (30_000, 34)}

TABLE2_NOTE = ("Table 2 (Zhang et al. 2017) beside ours. Ours: the zhang profile (min-max scaling, one-hot "
               "categoricals, rows with the bias on the unit sphere, regression targets in [0, 1]); d_paper is the "
               "paper's d; features_ours excludes and p_ours includes the bias. Adult: the paper's 32,561 rows are "
               "the training file adult.data alone, with the '?' values kept (as a category here).")


def analysis_spec(paper, analysis: str) -> dict:
    """What one of the paper's analyses (config ``analyses.<name>``) reads from the config
    (:class:`dperm.grid.Paper`): its experiments, their algorithms and the models (a rule
    parameter, so it reruns exactly when one of them changes)."""
    cfg = paper.analyses[analysis]
    exps = {name: paper.experiments[name].raw for name in cfg["experiments"]}
    keys = sorted({key for exp in exps.values() for key in exp["algorithms"]})
    return {**cfg, "experiments": exps, "algorithms": {key: paper.algorithms[key] for key in keys},
            "models": paper.models, "batch_size": paper.algorithms["bassily-sgd"].get("batch_size", 50)}


_ANALYSIS = {"type": "object", "required": ["experiments"],
             "properties": {"experiments": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                            "nonprivate_tuning": {"type": "string"}}, "additionalProperties": False}
ANALYSES_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["table3", "rrpsgd", "runtime"],
                   "properties": {"table3": _ANALYSIS, "rrpsgd": _ANALYSIS, "runtime": _ANALYSIS}}


SCORECARD_TABLES = ("table2", "table3", "claims")


def scorecard(tables):
    """Table 3's published errors and times and Table 2's sizes beside ours; the claims table (per
    Table 3 cell, the paper's two verdicts tested on ours)."""
    from ...report.scorecard import PaperCard, claims_table, comparison_rows

    nan, rows = float("nan"), []
    for _, r in tables["table3"].iterrows():
        cell = f"{r['dataset']}, μ = {r['mu']:g}, ε = {r['epsilon']:g}"
        for ours, published, ci, what, note in (
                ("error_outpert", "published_error_outpert", "error_outpert_ci95", "OutPert-GD error", ""),
                ("error_bassily", "published_error_bassily", "error_bassily_ci95", "Bassily et al. error", ""),
                ("seconds_outpert", "published_seconds_outpert", None, "OutPert-GD seconds", "another machine"),
                ("seconds_bassily_theorem_est", "published_seconds_bassily", None, "Bassily et al. seconds",
                 "ours estimated at the theorem's T = n²/m; another machine")):
            rows.append({"source": "Table 3", "item": f"{cell}: {what}", "published": r[published], "ours": r[ours],
                         "ours_ci95": r[ci] if ci else nan, "note": note})
    for _, r in tables["table2"].iterrows():
        rows.append({"source": "Table 2", "item": f"{r['dataset']}: rows", "published": r["n_paper"],
                     "ours": r["n_ours"], "ours_ci95": nan, "note": ""})
        rows.append({"source": "Table 2", "item": f"{r['dataset']}: d", "published": r["d_paper"],
                     "ours": r["features_ours"], "ours_ci95": nan, "note": "ours: features without the bias"})
    return PaperCard(comparison_rows(rows), claims_table(tables["claims"]),
                     "Table 3 (errors and running times) and Table 2 (dataset sizes) are the paper's printed numbers.")


def _published():
    from .. import published
    from .tables import load_published

    with published("zhang2017", "table3.csv").open() as fh:
        return load_published(fh)


def _table3(inputs):
    from ...report.products import Made, Table
    from .tables import table3, table3_markdown, table3_note

    spec = inputs.spec
    tuning = f"non-private ({spec['nonprivate_tuning']})"
    table = table3(inputs.cells, _published(), spec["models"], int(spec["batch_size"]), tuning)
    return Made(tables={"table3": Table(table, table3_note(table, spec["experiments"], tuning),
                                        shown=table3_markdown(table))})


def _claims(inputs):
    from ...report.products import Made, Table
    from .tables import claims, claims_note

    table = claims(inputs.table("table3"))
    return Made(tables={"claims": Table(table, claims_note(table))})


def _error_figure(inputs):
    from ...report.products import Made
    from .plot import error_figure

    table = inputs.table("table3")
    caps = sorted(set(table["steps_bassily"].dropna().astype(int)))
    runs = int(table["runs_outpert"].max())
    caption = (f"Error E[F(w_priv)] − F(ŵ) on the training set against ε (δ = 0.001), mean of {runs} runs with 95% "
               "bands (solid); the paper's Table 3 numbers dashed with hollow markers. Ours: rows scaled to the unit "
               "sphere (the paper's scaling is unknown, so levels differ). Bassily et al. run "
               f"min(n²/m, {', '.join(map(str, caps))}) steps with noise for the steps run; "
               "OutPert-GD uses Theorem 2/3's "
               "T and η with D from a non-private solve (tuning: non-private). Non-positive values are not drawn.")
    figure = error_figure(table, title=inputs.title("Zhang et al. 2017, Table 3: error against ε"),
                          caption=inputs.caption(caption))
    return Made(figures={"error": figure})


def _table2(inputs):
    from ...report.products import Made, Table
    from .tables import table2

    return Made(tables={"table2": Table(table2(inputs.files["provenance"], DATASET_SHAPES), TABLE2_NOTE)})


def _rrpsgd(inputs):
    from ...report.products import Made, Table
    from .plot import rrpsgd_figure
    from .runs import rrpsgd_table

    spec = inputs.spec
    (exp,) = spec["experiments"].values()
    model = spec["models"][exp["models"][0]]
    table = rrpsgd_table(inputs.cells)
    hidden = model.get("loss_params", {}).get("hidden", "d")
    hyper = next(iter(spec["algorithms"].values()))
    note = (f"RRPSGD (Zhang et al. 2017, Alg. 2; the paper has no experiment for it) on a one-hidden-layer tanh MLP "
            f"(width {hidden}, logistic output, μ = {model.get('l2', 0):g}) on {', '.join(exp['datasets'])}, "
            f"δ = {exp['delta']:g}, {int(table['runs'].max())} runs per setting. Metric: ‖∇F(w_R)‖² of the full "
            "training objective at the released iterate (Theorem 5 bounds its expectation; the bound is evaluated "
            f"with the declared smoothness β = {hyper.get('smoothness')} and N = max_steps = {hyper.get('max_steps')} "
            "rounds in place of n²). Noise 'theorem4' is Algorithm 2's density (proven for ε ≤ 1, so ε = 2 is not run "
            "with it); 'calibrated' is our amplification + advanced-composition calibration for the N rounds that can "
            f"run (valid for every ε). Per-example gradients clipped to L = {hyper.get('clip')} (the MLP has no global "
            "Lipschitz constant). grad_norm_sq_at_init = mean ‖∇F(w₀)‖² at each run's public random initialisation. "
            "Seconds: wall time per run.")
    figure = rrpsgd_figure(table, title=inputs.title(f"RRPSGD on an MLP ({', '.join(exp['datasets'])}): E‖∇F(w_R)‖² "
                                                     "against ε"),
                           caption=inputs.caption(
                               "Dotted: Theorem 5's bound with the declared β. Dashed black: ‖∇F‖² at the random "
                               "initialisation. Bands: 95% CI of the mean (lower edge at a tenth of the smallest "
                               "mean where it reaches 0)."))
    return Made(tables={"rrpsgd": Table(table, note)}, figures={"rrpsgd": figure})


def _runtime(inputs):
    from ...report.products import Made, Table
    from .runs import runtime_table

    spec = inputs.spec
    table = runtime_table(inputs.cells, _published())
    bassily = table[table["algorithm"] == "bassily-sgd"]
    capped = bool((bassily["steps"] < bassily["steps_theorem"]).any())
    runs = sorted({e["protocol"]["repeats"] * e["protocol"]["draws"] for e in spec["experiments"].values()})
    note = ("Runtime at the theorems' settings (zhang2017-runtime): wall seconds per run, each job pinned to one "
            "BLAS thread, on a 2-core machine, beside the paper's CPU time. OutPert-GD: Theorem 2/3's T, each run with "
            f"its own descent ({', '.join(map(str, runs))} run(s) per cell). Bassily et al.: "
            + ("steps capped (a reduced configuration: NOT the theorem's T = n²/m), "
               if capped else "the theorem's T = n²/m steps (m = 50, uncapped), ")
            + "one run per dataset and μ listed (the per-step cost does not depend on ε or μ; the published Bassily "
              "time is the mean of the paper's four ε of that dataset and μ). error_mean = E[F(w_priv)] − F(ŵ) of "
              "these runs. The number of runs is what fits an hour on 2 cores (BANK's 40.9M steps are the largest).")
    return Made(tables={"runtime": Table(table, note)})


def _analysis(name):
    """(the analysis's spec, the experiments whose cells it reads) of ``analyses.<name>``."""
    return (lambda paper: analysis_spec(paper, name)), (lambda paper: paper.analyses[name]["experiments"])


def _table2_provenance(paper):
    return [(d, paper.experiments[e].profile) for e in paper.analyses["table3"]["experiments"]
            for d in paper.experiments[e].datasets]


def _cells_of(name):
    def select(paper):
        from ...grid import cells

        return cells(paper, paper.analyses[name]["experiments"])

    return select


def _products():
    from ...report.products import Product, Reads

    return (
        Product("table3", make=_table3, tables=("table3",), spec=_analysis("table3")[0],
                reads=Reads(cells=_cells_of("table3"))),
        Product("claims", make=_claims, tables=("claims",), reads=Reads(tables=("table3",))),
        Product("error", make=_error_figure, figures=("error",), section="figures", reads=Reads(tables=("table3",))),
        Product("table2", make=_table2, tables=("table2",), reads=Reads(provenance=_table2_provenance)),
        Product("rrpsgd", make=_rrpsgd, tables=("rrpsgd",), figures=("rrpsgd",), section="RRPSGD",
                spec=_analysis("rrpsgd")[0], reads=Reads(cells=_cells_of("rrpsgd"))),
        Product("runtime", make=_runtime, tables=("runtime",), section="runtime (theorem settings)",
                spec=_analysis("runtime")[0], reads=Reads(cells=_cells_of("runtime")), target="zhang2017-runtime"),
    )


PRODUCTS = _products()
