"""Zhang, Zheng, Mou & Wang 2017, "Efficient Private ERM for Smooth Objectives" (IJCAI'17):
OutPert-GD against Bassily et al.'s noisy SGD. What the targets produce and how they differ from
the paper: docs/papers/zhang2017.md.

The grid (Table 3, RRPSGD on an MLP, the runtime runs) is ``config/papers/zhang2017.yaml``; this
package assembles Table 3 beside the published numbers (:mod:`.tables`), the claims check, the
error figure (:mod:`.plot`), the Table 2 analogue and the RRPSGD and runtime tables from the
cell records (:mod:`.runs`), each a ``python -m dperm zhang2017 <verb>`` command run by
``workflow/rules/papers/zhang2017.smk``.
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


def analysis_spec(paper: dict, analysis: str) -> dict:
    """What one of the paper's analyses (config ``analyses.<name>``) reads from the config: its
    experiments, their algorithms and the models (a rule parameter, so it reruns exactly when
    one of them changes)."""
    cfg = paper["analyses"][analysis]
    exps = {name: paper["experiments"][name] for name in cfg["experiments"]}
    keys = sorted({key for exp in exps.values() for key in exp["algorithms"]})
    return {**cfg, "experiments": exps, "algorithms": {key: paper["algorithms"][key] for key in keys},
            "models": paper["models"], "batch_size": paper["algorithms"]["bassily-sgd"].get("batch_size", 50)}


# verb -> (help, its positional input, the files it writes, whether it takes a --spec)
VERBS = {
    "table3": ("Table 3 from the table3 cell records and the published numbers", "records", ("csv", "md"), True),
    "claims": ("does OutPert-GD beat Bassily et al. per cell, as the paper reports?", "table3", ("csv", "md"), False),
    "figure": ("error against epsilon, one panel per dataset and mu", "table3", ("png", "pdf"), False),
    "table2": ("dataset table: ours (zhang profile) beside the paper's Table 2", "provenance", ("csv", "md"), False),
    "rrpsgd": ("RRPSGD table and figure from the rrpsgd cell records", "records", ("csv", "md", "png", "pdf"), True),
    "runtime": ("runtime table from the runtime cell records", "records", ("csv", "md"), True),
}


SCORECARD_TABLES = ("table2", "table3", "claims")


def scorecard(tables):
    """Table 3's published errors and times and Table 2's sizes beside ours; per Table 3 cell, the
    paper's two verdicts (which method has the lower error, which is faster) tested on ours."""
    from ...report.scorecard import PaperCard, claim_rows, comparison_rows

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
    claims = []
    for _, r in tables["claims"].iterrows():
        scope = f"{r['dataset']}, μ = {r['mu']:g}, ε = {r['epsilon']:g}"
        paper, ours = r["error: paper's lower"], r["error: our lower"]
        if r["error: our evidence"] != "significant":
            verdict = "not supported"
            reason = f"no significant difference ({r['error: our evidence']}; ours lower: {ours})"
        else:
            verdict = "supported" if ours == paper else "not supported"
            reason = f"ours lower: {ours} (significant)"
        claims.append({"claim": f"{paper} has the lower error", "scope": scope, "verdict": verdict, "reason": reason})
        faster = r["runtime: paper's faster"]
        claims.append({"claim": f"{faster} is faster", "scope": scope,
                       "verdict": "supported" if r["runtime: agrees"] == "yes" else "not supported",
                       "reason": f"ours (OutPert-GD vs Bassily at n²/m, estimated): {r['runtime: ours (s)']} s"})
    return PaperCard(comparison_rows(rows), claim_rows(claims),
                     "Table 3 (errors and running times) and Table 2 (dataset sizes) are the paper's printed numbers.")


def add_cli(sub) -> None:
    from ...report.tables import add_output_arguments

    p = sub.add_parser("zhang2017", help="Zhang et al. 2017: Table 3, claims, figures, RRPSGD, runtime")
    verbs = p.add_subparsers(dest="verb", required=True)
    handlers = {"table3": _table3, "claims": _claims, "figure": _figure, "table2": _table2, "rrpsgd": _rrpsgd,
                "runtime": _runtime}
    for verb, (text, source, outputs, spec) in VERBS.items():
        v = verbs.add_parser(verb, help=text)
        v.add_argument(source, nargs="+" if source in ("records", "provenance") else None)
        if spec:
            v.add_argument("--spec", required=True, help="what the analysis reads from the config, as JSON")
        add_output_arguments(v, outputs)
        v.set_defaults(func=handlers[verb])


def _published():
    from .. import published
    from .tables import load_published

    with published("zhang2017", "table3.csv").open() as fh:
        return load_published(fh)


def _table3(args) -> None:
    import json

    from ...files import write_text_atomic
    from ...report.captions import with_quick_note
    from ...report.tables import read_records
    from .tables import table3, table3_markdown, table3_note

    spec = json.loads(args.spec)
    tuning = f"non-private ({spec['nonprivate_tuning']})"
    table = table3(read_records(args.records), _published(), spec["models"], int(spec["batch_size"]), tuning)
    write_text_atomic(args.csv, table.to_csv(index=False))
    shown = table3_markdown(table)
    note = with_quick_note(table3_note(table, spec["experiments"], tuning), args.quick)
    write_text_atomic(args.md, note + "\n\n" + shown.astype(object).where(shown.notna(), "").to_markdown(index=False)
                      + "\n")


def _claims(args) -> None:
    import pandas as pd

    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .tables import claims, claims_note

    table = claims(pd.read_csv(args.table3))
    write_table(table, args.csv, args.md, with_quick_note(claims_note(table), args.quick))


def _figure(args) -> None:
    import pandas as pd

    from ...report.captions import with_quick_note
    from .plot import error_figure

    table = pd.read_csv(args.table3)
    caps = sorted(set(table["steps_bassily"].dropna().astype(int)))
    runs = int(table["runs_outpert"].max())
    caption = (f"Error E[F(w_priv)] − F(ŵ) on the training set against ε (δ = 0.001), mean of {runs} runs with 95% "
               "bands (solid); the paper's Table 3 numbers dashed with hollow markers. Ours: rows scaled to the unit "
               "sphere (the paper's scaling is unknown, so levels differ). Bassily et al. run "
               f"min(n²/m, {', '.join(map(str, caps))}) steps with noise for the steps run; "
               "OutPert-GD uses Theorem 2/3's "
               "T and η with D from a non-private solve (tuning: non-private). Non-positive values are not drawn.")
    title = ("[quick run] " if args.quick else "") + "Zhang et al. 2017, Table 3: error against ε"
    error_figure(table, args.png, args.pdf, title=title, caption=with_quick_note(caption, args.quick))


def _table2(args) -> None:
    from ...report.captions import with_quick_note
    from ...report.tables import write_table
    from .tables import table2

    write_table(table2(args.provenance, DATASET_SHAPES), args.csv, args.md, with_quick_note(TABLE2_NOTE, args.quick))


def _rrpsgd(args) -> None:
    import json

    from ...report.captions import with_quick_note
    from ...report.tables import read_records, write_table
    from .plot import rrpsgd_figure
    from .runs import rrpsgd_table

    spec = json.loads(args.spec)
    (exp,) = spec["experiments"].values()
    model = spec["models"][exp["models"][0]]
    table = rrpsgd_table(read_records(args.records))
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
    write_table(table, args.csv, args.md, with_quick_note(note, args.quick))
    title = ("[quick run] " if args.quick else "") + \
        f"RRPSGD on an MLP ({', '.join(exp['datasets'])}): E‖∇F(w_R)‖² against ε"
    rrpsgd_figure(table, args.png, args.pdf, title=title, caption=with_quick_note(
        "Dotted: Theorem 5's bound with the declared β. Dashed black: ‖∇F‖² at the random initialisation. "
        "Bands: 95% CI of the mean (lower edge at a tenth of the smallest mean where it reaches 0).", args.quick))


def _runtime(args) -> None:
    import json

    from ...report.captions import with_quick_note
    from ...report.tables import read_records, write_table
    from .runs import runtime_table

    spec = json.loads(args.spec)
    table = runtime_table(read_records(args.records), _published())
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
    write_table(table, args.csv, args.md, with_quick_note(note, args.quick))
