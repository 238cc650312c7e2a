"""Lowy & Razaviyayn, "Output Perturbation for Differentially Private Convex Optimization: Faster
and More General": black-box output perturbation, private tilted ERM, private adversarial
training. The paper has no experiments; ours put each main claim to data. What the target
produces and how it differs from the paper: docs/papers/lowy2021.md.

The grid is ``config/papers/lowy2021.yaml``. The comparison experiments run as ordinary cells
(generic records and summaries); the rates, tilted-ERM and adversarial experiments need the
released weights on other data (population sample, groups, attacks), so this package runs their
fits itself (:mod:`.evaluate`, the same fits as the protocol's) and builds every table, figure
and the claims table: ``python -m dperm lowy2021 <verb>``, run by
``workflow/rules/papers/lowy2021.smk``.
"""

from __future__ import annotations

TITLE = "Lowy & Razaviyayn: black-box output perturbation"

# The paper reports no datasets.
DATASET_SHAPES: dict = {}

# (Δ_α/Δ_F)² at the default α = μΔ_F²/8: the black box's excess risk over the conceptual one in
# the quadratic regime (docs/deviations.md#blackbox-solvers).
BLACKBOX_FACTOR = 4.0


def analysis_spec(paper: dict, analysis: str) -> dict:
    """What one analysis reads from the config: its settings, its experiments, the algorithms'
    labels in the paper's order, the models (a rule parameter: it reruns exactly when these change)."""
    cfg = paper["analyses"][analysis]
    exps = {name: paper["experiments"][name] for name in cfg["experiments"]}
    return {**cfg, "name": analysis, "experiments": exps, "order": list(paper["algorithms"]),
            "labels": {k: v.get("label", k) for k, v in paper["algorithms"].items()}, "models": paper["models"],
            "algorithms": paper["algorithms"], "quick": bool(paper.get("quick"))}


#: analysis -> what :mod:`.evaluate` measures for its experiments
EVALUATED = {"rates": "population", "term": "groups", "adv": "robust"}


def evaluation_jobs(paper: dict, seed: int) -> dict:
    """(analysis, dataset) -> what its evaluation job runs: the cell specs of every job of the
    analysis's experiments on that dataset (one process per dataset: one load of the data), the
    analysis settings (``kind`` and the config's settings), the profile and the population
    dataset (rates at the n sweep's d only). The rule file reads this."""
    from ...datasets import synthetic
    from ...experiments import job_specs, jobs

    out = {}
    for analysis, kind in EVALUATED.items():
        cfg = paper["analyses"][analysis]
        settings = {k: v for k, v in cfg.items() if k != "experiments"}
        datasets = dict.fromkeys(d for e in cfg["experiments"] for d in paper["experiments"][e]["datasets"])
        for dataset in datasets:
            specs = [spec for job in jobs(paper, cfg["experiments"]) if job.dataset == dataset
                     for spec in job_specs(paper, job, seed)]
            profiles = sorted({spec["profile"] for spec in specs})
            if len(profiles) != 1:
                raise ValueError(f"analysis {analysis!r} runs {dataset} with several profiles {profiles}")
            population = None
            if kind == "population":
                shape = synthetic.parse(dataset)
                if shape is not None and shape[2] == int(cfg["n_sweep"]["d"]):
                    population = cfg["population"]["dataset"]
            out[(analysis, dataset)] = {"specs": specs, "analysis": {"kind": kind, **settings},
                                        "profile": profiles[0], "population": population,
                                        "algorithms": sorted({s["algorithm"] for s in specs})}
    return out


def evaluated_files(paper: dict, analysis: str, out: str = "") -> list[str]:
    """The evaluation records an analysis's tables read (one file per dataset)."""
    cfg = paper["analyses"][analysis]
    datasets = dict.fromkeys(d for e in cfg["experiments"] for d in paper["experiments"][e]["datasets"])
    return [f"{out}results/lowy2021/evaluate/{analysis}/{dataset}.csv" for dataset in datasets]


VERBS = {
    "evaluate": "run the cells of one experiment and dataset, measuring the paper's own metrics",
    "compare": "black box vs conceptual vs prior methods: tables and figures from the compare cells",
    "rates": "rates against n and d: slopes table and figures",
    "term": "tilted ERM on Adult: group metrics against the tilt, noise against the tilt",
    "adv": "adversarial training: robust accuracy against the attack radius",
    "claims": "the claims table",
}


SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows, each scoped by the result of the paper it tests."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"], scope=("paper",), reason="measured"),
                     note="The paper has no experiments: its claims are theorems and remarks, tested here on "
                          "experiments designed for each (docs/deviations.md#lowy-experiments); there is no "
                          "published number to set ours beside.")


def add_cli(sub) -> None:
    p = sub.add_parser("lowy2021", help="Lowy & Razaviyayn: evaluation, tables, figures, claims")
    verbs = p.add_subparsers(dest="verb", required=True)
    v = verbs.add_parser("evaluate", help=VERBS["evaluate"])
    v.add_argument("--spec", required=True, help="JSON list of the cell specs (or @file.json)")
    v.add_argument("--analysis", required=True, help="the analysis settings as JSON (kind, group_by, test_radii, ...)")
    v.add_argument("--data", required=True, help="prepared .npz of the dataset")
    v.add_argument("--population", default=None, help="prepared .npz holding the population sample (rates)")
    v.add_argument("--out", required=True)
    v.set_defaults(func=_evaluate)
    outputs = {"compare": ("csv", "md", "ratios-csv", "ratios-md", "pure-png", "pure-pdf", "approx-png", "approx-pdf",
                           "cost-png", "cost-pdf"),
               "rates": ("csv", "md", "points-csv", "points-md", "n-png", "n-pdf", "d-png", "d-pdf"),
               "term": ("csv", "md", "png", "pdf", "noise-png", "noise-pdf"),
               "adv": ("csv", "md", "png", "pdf")}
    handlers = {"compare": _compare, "rates": _rates, "term": _term, "adv": _adv}
    for verb, names in outputs.items():
        v = verbs.add_parser(verb, help=VERBS[verb])
        v.add_argument("records", nargs="+", help="records .csv files")
        v.add_argument("--spec", required=True, help="what the analysis reads from the config, as JSON")
        for name in names:
            v.add_argument(f"--{name}", required=True)
        v.add_argument("--quick", action="store_true", help="say in every note that this is a quick run")
        v.set_defaults(func=handlers[verb])
    v = verbs.add_parser("claims", help=VERBS["claims"])
    for name in ("ratios", "slopes", "points", "term", "adv"):
        v.add_argument(f"--{name}", required=True, help=f"the {name} table (.csv)")
    v.add_argument("--spec", required=True)
    v.add_argument("--csv", required=True)
    v.add_argument("--md", required=True)
    v.add_argument("--quick", action="store_true")
    v.set_defaults(func=_claims)


def _evaluate(args) -> None:
    import json
    import logging

    from ...config import load_spec
    from ...datasets.prepare import load_prepared
    from ...files import write_text_atomic
    from ...losses import label_form
    from .evaluate import evaluate, population_arrays

    specs = load_spec(args.spec)
    analysis = json.loads(args.analysis)
    arrays, _ = load_prepared(args.data)
    population = None
    if args.population:
        pop, _ = load_prepared(args.population)
        model = specs[0]["model"]
        population = population_arrays(pop, label_form(model["loss"], **model.get("loss_params", {})),
                                       int(analysis["population"]["start"]))
    records = evaluate(specs, arrays, analysis, population, log=logging.getLogger("dperm").info)
    write_text_atomic(args.out, records.to_csv(index=False))


def _note(spec: dict, text: str) -> str:
    from ...report.captions import with_quick_note

    return with_quick_note(text, spec.get("quick", False))


def _protocol(spec: dict) -> str:
    from ...report.captions import protocol_text

    texts = sorted({protocol_text(e["protocol"]) for e in spec["experiments"].values()})
    text = "; ".join(texts)
    return text[:1].upper() + text[1:]


def _compare(args) -> None:
    import json

    from ...report.tables import read_records, write_table
    from . import compare

    spec = json.loads(args.spec)
    cells = compare.cell_table(compare.load(read_records(args.records)))
    cells["label"] = [spec["labels"].get(key, label) for key, label in zip(cells["algorithm"], cells["label"])]
    ratios = compare.ratio_table(cells)
    protocol = _protocol(spec)
    note = ("Black box vs conceptual vs prior methods (logistic regression, rows in the unit ball, replace-one "
            f"adjacency for output perturbation, add/remove for DP-GD and DP-SGD). {protocol}. excess_risk = "
            "F(w) − F* on the training rows (F with its μ-term, F* certified); accuracy on the test rows; mean ± 95% "
            "t-interval over the draws (noise draws of one split); grad_evals in full-gradient equivalents; seconds "
            "per run on a shared 2-core machine. Black box + SGD: accuracy in expectation only, capped at 100,000 "
            "steps, noise calibrated to the α those certify; black box + Katyusha: in expectation only under ε-DP, "
            "Markov remedy (δ/2 charged) under (ε, δ)-DP. DP-GD and DP-SGD: untuned public step sizes.")
    write_table(cells, args.csv, args.md, _note(spec, note))
    ratio_note = ("Per cell: excess risk over the certified minimiser's at the same ε (geometric mean, min and max "
                  "over ε), gradient evaluations and seconds over the non-private L-BFGS solve, and the gradient "
                  "evaluations "
                  "the solver needs for the target α = μΔ²/8 (SGD: Bubeck's T for that α, which is not run). "
                  f"The black box's predicted factor is {BLACKBOX_FACTOR:g} (noise calibrated to 2Δ). {protocol}.")
    write_table(ratios, args.ratios_csv, args.ratios_md, _note(spec, ratio_note))
    order, labels = spec["order"], spec["labels"]
    for privacy, png, pdf, what in (("pure", args.pure_png, args.pure_pdf, "ε-DP (Gamma-norm noise)"),
                                    ("approx", args.approx_png, args.approx_pdf,
                                     "(ε, 10⁻¹⁰)-DP (Zhao et al.'s Gaussian)")):
        compare.excess_figure(
            cells, privacy, png, pdf, order=order, labels=labels,
            title=("[quick run] " if spec["quick"] else "") + f"Excess empirical risk against ε, {what}",
            caption=_note(spec, "Log–log; mean of the draws with 95% bands; non-positive values not drawn. "
                                f"{protocol}. "
                                "Black box: noise for 2Δ (α = μΔ²/8), so ≈ 4× the conceptual excess; SGD capped (noise "
                                "for the α its steps certify, in expectation only). μ = 0: regularised extension "
                                "(rate-optimal λ, projection onto ‖w‖ ≤ 15). OutPert-GD: Zhang et al.'s Theorem "
                                "2/3 T. DP-GD, DP-SGD: add/remove-one DP (their ε under replace-one would double), "
                                "untuned public step sizes."))
    compare.cost_figure(cells, args.cost_png, args.cost_pdf, order=order, labels=labels,
                        title=("[quick run] " if spec["quick"] else "")
                        + "Cost per run: gradient evaluations and seconds",
                        caption=_note(spec, "ε-DP cells, mean over ε and draws (the solves do not depend on ε), log "
                                            "scale. Gradient evaluations in full-gradient equivalents (one pass over "
                                            "the rows = 1). Seconds on a shared 2-core machine (Katyusha's inner loop "
                                            "is Python, the others are numpy BLAS). The hatched bar is the non-private "
                                            "L-BFGS solve. SGD's bars are its capped runs (100,000 steps); its "
                                            f"target α would need the count in compare-ratios. {protocol}."))


def _rates(args) -> None:
    import json

    from ...report.tables import read_records, write_table
    from . import rates

    spec = json.loads(args.spec)
    records = rates.load(read_records(args.records))
    pts = rates.points(records)
    d, n = int(spec["n_sweep"]["d"]), int(spec["d_sweep"]["n"])
    slopes = rates.slopes(records, d, n)
    protocol = _protocol(spec)
    pop = spec["population"]
    write_table(slopes, args.csv, args.md, _note(spec, (
        "Fitted log–log slopes (least squares on the means; 95% bootstrap interval over the draws) beside Corollary "
        "2.2's (n⁻², d² for ε-DP, d for (ε, δ)-DP) and the slope of the noise law E‖z‖² over the same grid. "
        f"Synthetic logistic data, μ = 0.01, ε = 1, δ = 10⁻¹⁰ for (ε, δ); n sweep at d = {d}, d sweep at n = {n:,}; "
        f"{protocol}. normalised_excess = excess / (½·tr∇²F(ŵ)/p): the quadratic prediction for isotropic noise "
        "divided "
        f"out. Population: rows {int(pop['start']):,}–end of {pop['dataset']} (never trained on).")))
    write_table(pts, args.points_csv, args.points_md, _note(spec, (
        "Each point: mean ± 95% half-width over the draws; predicted_excess = ½·(tr∇²F(ŵ)/p)·E‖z‖² (quadratic "
        f"model, isotropic noise). {protocol}.")))
    order, labels = spec["order"], spec["labels"]
    quick = "[quick run] " if spec["quick"] else ""
    n_pop = int(records["n_population"].max())
    rates.n_figure(pts, d, args.n_png, args.n_pdf, order=order, labels=labels, population_rows=n_pop,
                   title=quick + f"Excess risk against n (synthetic, d = {d}, μ = 0.01, ε = 1)",
                   caption=_note(spec, "Log–log, mean with 95% bands. Dotted: Corollary 2.2's n⁻² anchored at the "
                                       "conceptual algorithm's first point, Proposition 4.2's n⁻¹ at the non-private "
                                       f"last point. Population excess on {n_pop:,} held-out rows "
                                       f"(solid ε-DP, dashed (ε, 10⁻¹⁰)-DP, black non-private). {protocol}."))
    rates.d_figure(pts, n, args.d_png, args.d_pdf, order=order, labels=labels,
                   title=quick + f"Excess risk against d (synthetic, n = {n:,}, μ = 0.01, ε = 1)",
                   caption=_note(spec, "Log–log, mean with 95% bands. Top: excess empirical risk; bottom: divided by "
                                       "½·tr∇²F(ŵ)/p, leaving E‖z‖². Dotted: Corollary 2.2's d² (ε-DP) and d "
                                       "((ε, δ)-DP). "
                                       f"{protocol}."))


def _term(args) -> None:
    import json

    from ...report.tables import read_records, write_table
    from . import tilted

    spec = json.loads(args.spec)
    records = read_records(args.records)
    table = tilted.term_table(records)
    (exp,) = spec["experiments"].values()
    radius = float(spec["algorithms"]["term"].get("radius", 4.0))
    protocol = _protocol(spec)
    groups = " × ".join(spec["group_by"])
    write_table(table, args.csv, args.md, _note(spec, (
        f"Tilted ERM on Adult (logistic loss, μ = 0.001, ‖w‖ ≤ {radius:g}, rows in the unit ball), (ε, "
        f"{exp['delta']:g})-DP. Average = over all test rows; worst group = the {groups} group with the largest mean "
        f"test loss / smallest accuracy (groups with test rows only; smallest_group = its size). "
        "excess_tilted_objective = F_t(w) − F_t(w_nonprivate) on the training rows. sensitivity = (2L/μ)e^{tM}/(e^{tM} "
        f"+ n − 1) + 2√(2α/μ) (M = R_x·R = {radius:g}); noise_scale = σ per coordinate. {protocol}.")))
    quick = "[quick run] " if spec["quick"] else ""
    smallest = int(table["smallest_group"].min())
    tilted.term_figure(table, args.png, args.pdf, title=quick + "Tilted ERM on Adult: average and worst-group metrics",
                       caption=_note(spec, f"Against the tilt t; mean with 95% bands over the noise draws. Worst "
                                           f"group over {groups} (groups as small as {smallest} test rows). "
                                           "Non-private: the constrained minimiser (dashed; one deterministic fit, "
                                           f"no band). {protocol}."))
    n = int(records["n_train"].iloc[0])
    tilted.term_noise_figure(table, n=n, loss_range=radius, png=args.noise_png, pdf=args.noise_pdf,
                             title=quick + "Tilted ERM: the price of tilting under privacy",
                             caption=_note(spec, "Sensitivity of the release (left; it does not depend on ε) and "
                                                 "Gaussian σ (right) against t, log scale: deterministic, so no "
                                                 "bands. Dotted: the ERM value times n e^{tM}/(e^{tM} + n − 1), "
                                                 f"M = {radius:g}, n = {n:,}."))


def _adv(args) -> None:
    import json

    from ...report.tables import read_records, write_table
    from . import tilted

    spec = json.loads(args.spec)
    radii = spec["test_radii"]
    table = tilted.adv_table(read_records(args.records), radii)
    protocol = _protocol(spec)
    write_table(table, args.csv, args.md, _note(spec, (
        "Accuracy under the worst ℓ2 attack of radius r_test (a test row counts as correct iff "
        "y⟨w, x⟩ − r_test‖w‖ > 0; "
        "every coordinate may be perturbed) of robust logistic regression trained at r_train, private ((ε, 10⁻¹⁰), "
        f"sensitivity 2(1 + r_train)/(μn)) and non-private; mean ± 95% half-width over the draws. {protocol}.")))
    tilted.adv_figure(table, radii, args.png, args.pdf,
                      title=("[quick run] " if spec["quick"] else "") + "Adversarial training: accuracy under attack",
                      caption=_note(spec, "One line per training radius; mean with 95% bands over the noise draws "
                                          f"(non-private: one deterministic fit, no band). {protocol}."))


def _claims(args) -> None:
    import json

    import pandas as pd

    from ...report.tables import write_table
    from .claims import claims_table

    spec = json.loads(args.spec)
    table = claims_table(pd.read_csv(args.ratios), pd.read_csv(args.slopes), pd.read_csv(args.points),
                         pd.read_csv(args.term),
                         pd.read_csv(args.adv), spec["test_radii"], BLACKBOX_FACTOR)
    write_table(table, args.csv, args.md, _note(spec, (
        "Each claim of Lowy & Razaviyayn our experiments test, what we measured, our verdict (rules in "
        "src/dperm/papers/lowy2021/claims.py) and the cells it rests on.")))
