"""Lowy & Razaviyayn, "Output Perturbation for Differentially Private Convex Optimization: Faster
and More General": black-box output perturbation, private tilted ERM, private adversarial
training. The paper has no experiments; ours put each main claim to data. What the target
produces and how it differs from the paper: docs/papers/lowy2021.md.

The grid is ``config/papers/lowy2021.yaml``. Every experiment runs as ordinary cells; the
rates, tilted-ERM and adversarial experiments ask the protocol for metric hooks
(:mod:`dperm.protocol.metric_hooks`: population excess risk and curvature, worst-group metrics,
robust accuracy), which their records carry in ``extra``. This package builds every table, figure
and the claims table from those records, declared in ``PRODUCTS``.
"""

from __future__ import annotations

TITLE = "Lowy & Razaviyayn: black-box output perturbation"

# The paper reports no datasets.
DATASET_SHAPES: dict = {}

# (Δ_α/Δ_F)² at the default α = μΔ_F²/8: the black box's excess risk over the conceptual one in
# the quadratic regime (docs/deviations.md#blackbox-solvers).
BLACKBOX_FACTOR = 4.0


def analysis_spec(paper, analysis: str) -> dict:
    """What one analysis reads from the config (:class:`dperm.grid.Paper`): its settings, its
    experiments, the algorithms' labels in the paper's order, the models (a rule parameter: it
    reruns exactly when these change)."""
    cfg = paper.analyses[analysis]
    exps = {name: paper.experiments[name].raw for name in cfg["experiments"]}
    return {**cfg, "name": analysis, "experiments": exps, "order": list(paper.algorithms),
            "labels": {k: v.get("label", k) for k, v in paper.algorithms.items()}, "models": paper.models,
            "algorithms": paper.algorithms, "quick": paper.quick}


_EXPERIMENTS = {"type": "array", "minItems": 1, "items": {"type": "string"}}
ANALYSES_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["compare", "rates", "term", "adv"],
    "properties": {
        "compare": {"type": "object", "additionalProperties": False, "required": ["experiments"],
                    "properties": {"experiments": _EXPERIMENTS}},
        "rates": {"type": "object", "additionalProperties": False, "required": ["experiments", "n_sweep", "d_sweep"],
                  "properties": {"experiments": _EXPERIMENTS,
                                 "n_sweep": {"type": "object", "required": ["d"], "additionalProperties": False,
                                             "properties": {"d": {"type": "integer", "minimum": 1}}},
                                 "d_sweep": {"type": "object", "required": ["n"], "additionalProperties": False,
                                             "properties": {"n": {"type": "integer", "minimum": 1}}}}},
        "term": {"type": "object", "additionalProperties": False, "required": ["experiments", "neighbours"],
                 "properties": {"experiments": _EXPERIMENTS, "neighbours": {
                     "type": "object", "additionalProperties": False,
                     "required": ["dataset", "profile", "rows", "mu", "radius", "random_rows", "seed"],
                     "properties": {"dataset": {"type": "string"}, "profile": {"type": "string"},
                                    "rows": {"type": "integer", "minimum": 10},
                                    "mu": {"type": "number", "exclusiveMinimum": 0},
                                    "radius": {"type": "number", "exclusiveMinimum": 0},
                                    "random_rows": {"type": "integer", "minimum": 0},
                                    "seed": {"type": "integer", "minimum": 0}}}}},
        "adv": {"type": "object", "additionalProperties": False, "required": ["experiments"],
                "properties": {"experiments": _EXPERIMENTS}},
    },
}


SCORECARD_TABLES = ("claims",)


def scorecard(tables):
    """The claims check's rows, each scoped by the result of the paper it tests."""
    from ...report.scorecard import PaperCard, claims_table

    return PaperCard(claims=claims_table(tables["claims"]),
                     note="The paper has no experiments: its claims are theorems and remarks, tested here on "
                          "experiments designed for each (docs/deviations.md#lowy-experiments); there is no "
                          "published number to set ours beside.")


def _protocol(spec: dict) -> str:
    from ...report.captions import protocol_text

    texts = sorted({protocol_text(e["protocol"]) for e in spec["experiments"].values()})
    text = "; ".join(texts)
    return text[:1].upper() + text[1:]


def _metric_settings(spec: dict, hook: str) -> dict:
    """A metric hook's settings, the same in every experiment of the analysis."""
    settings = [e.get("metrics", {}).get(hook) for e in spec["experiments"].values()]
    if any(s is None for s in settings) or any(s != settings[0] for s in settings):
        raise ValueError(f"analysis {spec['name']!r}: every experiment must ask for the metric hook {hook!r} with "
                         f"the same settings; got {settings}")
    return settings[0]


def _compare(inputs):
    from ...report.products import Made, Table
    from . import compare

    spec = inputs.spec
    cells = compare.cell_table(compare.load(inputs.cells))
    cells["label"] = [spec["labels"].get(key, label) for key, label in zip(cells["algorithm"], cells["label"])]
    ratios = compare.ratio_table(cells)
    protocol = _protocol(spec)
    note = ("Black box vs conceptual vs prior methods (logistic regression and, in hinge-*, the linear SVM; rows in "
            "the unit ball; replace-one adjacency for output perturbation, ObjPert and noisy SGD, add/remove for "
            f"DP-GD and DP-SGD). {protocol}. excess_risk = F(w) − F* on the training rows (F with its μ-term; F* "
            "certified for the logistic loss, an L-BFGS solve for the hinge); accuracy on the test rows; mean ± 95% "
            "t-interval over the draws (noise draws of one split); majority_rate, positive_share and learns: the "
            "learning guard (learns = no: a constant classifier in all but name); grad_evals in full-gradient "
            "equivalents; seconds per run on a shared 2-core machine. Black box + SGD: accuracy in expectation only, "
            "capped at 100,000 steps, noise calibrated to the α those certify; black box + Katyusha: in expectation "
            "only under ε-DP, Markov remedy (δ/2 charged) under (ε, δ)-DP; black box + smoothed AGD (hinge): "
            "deterministic, certified for the hinge. nonsmooth_bound: Theorem 3.1(a)'s α + L·E‖z‖ + (μ/2)·E‖z‖² on "
            "the expected excess. DP-GD and DP-SGD: untuned public step sizes; noisy SGD (Bassily et al.): capped at "
            "20,000 steps.")
    tables = {"compare": Table(cells, note)}
    ratio_note = ("Per cell: excess risk over the certified minimiser's at the same ε (geometric mean, min and max "
                  "over ε), gradient evaluations and seconds over the non-private L-BFGS solve, and the gradient "
                  "evaluations the solver needs for the target α = μΔ²/8 (SGD: Bubeck's T for that α, which is not "
                  "run). measured_evals_to_alpha: in the ε-DP experiments, the full-gradient equivalents each "
                  "black-box solver needed on the training rows to reach F(w) − F* ≤ α (F* certified; reached_alpha "
                  "false: not within measured_budget_evals, a lower bound), beside certified_evals_to_alpha, the "
                  "data-independent count it runs. "
                  f"The black box's predicted factor is {BLACKBOX_FACTOR:g} (noise calibrated to 2Δ). {protocol}.")
    tables["compare-ratios"] = Table(ratios, ratio_note)
    order, labels = spec["order"], spec["labels"]
    figures = {}
    for privacy, what in (("pure", "ε-DP (Gamma-norm noise)"), ("approx", "(ε, 10⁻¹⁰)-DP (Zhao et al.'s Gaussian)")):
        figures[f"excess-{privacy}"] = compare.excess_figure(
            cells, privacy, order=order, labels=labels,
            title=inputs.title(f"Excess empirical risk against ε, {what}"),
            caption=inputs.caption(
                "Log–log; mean of the draws with 95% bands (a band that reaches the bottom edge includes values at or "
                "below it; arrows: means off the panel's scale); red crosses: cells that do not learn. "
                f"{protocol}. Black box: noise for 2Δ (α = μΔ²/8), so ≈ 4× the conceptual excess where the loss is "
                "quadratic at the noise's scale; SGD capped (noise for the α its steps certify, in expectation only). "
                "μ = 0: regularised extension (rate-optimal λ, projection onto ‖w‖ ≤ 15). Hinge panels: the linear "
                "SVM, black box + AGD on the smoothed hinge (certified for the hinge). OutPert-GD: Zhang et al.'s "
                "Theorem 2/3 T. ObjPert: replace-one (Kifer et al.'s noise doubled). Noisy SGD (Bassily et al.): "
                "capped at 20,000 steps. DP-GD, DP-SGD: add/remove-one DP (their ε under replace-one would double), "
                "untuned public step sizes."))
    figures["cost"] = compare.cost_figure(
        cells, order=order, labels=labels, title=inputs.title("Cost per run: gradient evaluations and seconds"),
        caption=inputs.caption("ε-DP cells, mean over ε and draws (the solves do not depend on ε), log scale. Gradient "
                               "evaluations in full-gradient equivalents (one pass over the rows = 1). Seconds on a "
                               "shared 2-core machine (Katyusha's and SGD's one-row steps are a Python recursion over "
                               "blocks of numpy products, the others numpy BLAS). "
                               "The hatched bar is the non-private L-BFGS solve. Black ticks: the evaluations each "
                               "black-box solver needed to reach α on these rows (measured, solver_speed; SGD's "
                               "tick is its budget where it did not reach α), beside its certified count (the bar). "
                               "SGD's bars are its capped runs (100,000 steps); its target α would need the count in "
                               "compare-ratios. "
                               f"{protocol}."))
    return Made(tables=tables, figures=figures)


def _rates(inputs):
    from ...report.products import Made, Table
    from . import rates

    spec = inputs.spec
    records = rates.load(inputs.cells)
    pts = rates.points(records)
    d, n = int(spec["n_sweep"]["d"]), int(spec["d_sweep"]["n"])
    slopes = rates.slopes(records, d, n)
    protocol = _protocol(spec)
    pop = _metric_settings(spec, "population")
    tables = {"rates": Table(slopes, (
        "Fitted log–log slopes (least squares on the means; 95% bootstrap interval over the draws) beside Corollary "
        "2.2's (n⁻², d² for ε-DP, d for (ε, δ)-DP) and the slope of the noise law E‖z‖² over the same grid. "
        f"Synthetic logistic data, μ = 0.01, ε = 1, δ = 10⁻¹⁰ for (ε, δ); n sweep at d = {d}, d sweep at n = {n:,}; "
        f"{protocol}. normalised_excess = excess / (½·tr∇²F(ŵ)/p): the quadratic prediction for isotropic noise "
        "divided "
        f"out. Population: rows {int(pop['start']):,}–end of {pop['dataset']} (never trained on).")),
              "rates-points": Table(pts, (
                  "Each point: mean ± 95% half-width over the draws; predicted_excess = ½·(tr∇²F(ŵ)/p)·E‖z‖² "
                  f"(quadratic model, isotropic noise). {protocol}."))}
    order, labels = spec["order"], spec["labels"]
    n_pop = int(records["n_population"].max())
    figures = {}
    figures["rates-n"] = rates.n_figure(
        pts, d, order=order, labels=labels, population_rows=n_pop,
        title=inputs.title(f"Excess risk against n (synthetic, d = {d}, μ = 0.01, ε = 1)"),
        caption=inputs.caption("Log–log, mean with 95% bands. Dotted: Corollary 2.2's n⁻² anchored at the conceptual "
                               "algorithm's first point, Proposition 4.2's n⁻¹ at the non-private last point. "
                               f"Population excess on {n_pop:,} held-out rows (solid ε-DP, dashed (ε, 10⁻¹⁰)-DP, "
                               f"black non-private). {protocol}."))
    figures["rates-d"] = rates.d_figure(
        pts, n, order=order, labels=labels,
        title=inputs.title(f"Excess risk against d (synthetic, n = {n:,}, μ = 0.01, ε = 1)"),
        caption=inputs.caption("Log–log, mean with 95% bands. Top: excess empirical risk; bottom: divided by "
                               "½·tr∇²F(ŵ)/p, leaving E‖z‖². Dotted: Corollary 2.2's d² (ε-DP) and d ((ε, δ)-DP). "
                               f"{protocol}."))
    return Made(tables=tables, figures=figures)


def _term(inputs):
    from ...report.products import Made, Table
    from . import tilted

    spec = inputs.spec
    records = tilted.load_term(inputs.cells)
    table = tilted.term_table(records)
    (exp,) = spec["experiments"].values()
    radius = float(spec["algorithms"]["term"].get("radius", 4.0))
    protocol = _protocol(spec)
    groups = " × ".join(_metric_settings(spec, "groups")["group_by"])
    tables = {"term": Table(table, (
        f"Tilted ERM on Adult (logistic loss, μ = 0.001, ‖w‖ ≤ {radius:g}, rows in the unit ball), (ε, "
        f"{exp['delta']:g})-DP. Average = over all test rows; worst group = the {groups} group with the largest mean "
        f"test loss / smallest accuracy (groups with test rows only; smallest_group = its size). "
        "excess_tilted_objective = F_t(w) − F_t(w_nonprivate) on the training rows. sensitivity = (2L/μ)e^{tM}/(e^{tM} "
        f"+ n − 1) + 2√(2α/μ) (M = R_x·R = {radius:g}); noise_scale = σ per coordinate. {protocol}."))}
    smallest = int(table["smallest_group"].min())
    figures = {}
    figures["term"] = tilted.term_figure(
        table, title=inputs.title("Tilted ERM on Adult: average and worst-group metrics"),
        caption=inputs.caption(f"Against the tilt t; mean with 95% bands over the noise draws. Worst group over "
                               f"{groups} (groups as small as {smallest} test rows). Non-private: the constrained "
                               f"minimiser (dashed; one deterministic fit, no band). {protocol}."))
    n = int(records["n_train"].iloc[0])
    figures["term-noise"] = tilted.term_noise_figure(
        table, n=n, loss_range=radius, title=inputs.title("Tilted ERM: the price of tilting under privacy"),
        caption=inputs.caption("Sensitivity of the release (left; it does not depend on ε) and Gaussian σ (right) "
                               "against t, log scale: deterministic, so no bands. Dotted: the ERM value times "
                               f"n e^{{tM}}/(e^{{tM}} + n − 1), M = {radius:g}, n = {n:,}."))
    return Made(tables=tables, figures=figures)


def _adv(inputs):
    from ...report.products import Made, Table
    from . import tilted

    spec = inputs.spec
    radii = _metric_settings(spec, "robust")["test_radii"]
    table = tilted.adv_table(tilted.load_adv(inputs.cells, radii), radii)
    protocol = _protocol(spec)
    tables = {"adv": Table(table, (
        "Accuracy under the worst ℓ2 attack of radius r_test (a test row counts as correct iff "
        "y⟨w, x⟩ − r_test‖w_A‖ > 0, A the attacked columns: on Adult the numeric attributes, on the synthetic data "
        "every feature) of robust logistic regression trained at r_train against the same attack, private ((ε, "
        f"10⁻¹⁰), sensitivity 2(1 + r_train)/(μn)) and non-private; mean ± 95% half-width over the draws. "
        "majority_rate, positive_share (clean predictions) and learns: the learning guard (a constant classifier "
        f"keeps the majority rate under every attack). {protocol}."))}
    figure = tilted.adv_figure(
        table, radii, title=inputs.title("Adversarial training: accuracy under attack"),
        caption=inputs.caption("One line per training radius; mean with 95% bands over the noise draws (non-private: "
                               f"one deterministic fit, no band). {protocol}."))
    return Made(tables=tables, figures={"adv": figure})


def _term_sensitivity(inputs):
    from ...report.products import Made, Table
    from . import neighbours

    spec = inputs.spec
    cfg = spec["neighbours"]
    X, y = neighbours.sample(inputs.prepared(cfg["dataset"], cfg["profile"]), int(cfg["rows"]), int(cfg["seed"]))
    table = neighbours.check(X, y, tilts=spec["tilts"], mu=float(cfg["mu"]), radius=float(cfg["radius"]),
                             random_rows=int(cfg["random_rows"]), seed=int(cfg["seed"]))
    note = ("Tilted ERM on replace-one neighbours built to move the minimiser "
            f"(src/dperm/papers/lowy2021/neighbours.py): a seeded sample of {int(cfg['rows'])} {cfg['dataset']} rows "
            f"({cfg['profile']}), μ = {float(cfg['mu']):g}, ‖w‖ ≤ R = {float(cfg['radius']):g} (M = R), the tilts of "
            "the term experiment. largest_distance: the largest ‖w(D) − w(D′)‖ of the constrained minimisers "
            "(accuracy 10⁻¹²) over the pairs; bound: Δ_t = (2L/μ)e^{tM}/(e^{tM} + n − 1); ratio above 1 would mean "
            "the bound is too small (not DP). largest_release_distance: the same for the black box's points (noise "
            "~10⁻¹⁵), against the sensitivity its noise is calibrated to (2Δ_t). ball_diameter: 2R, which bounds "
            "every distance.")
    figure = neighbours.figure(table, title=inputs.title("Tilted ERM: observed neighbour distances against the bound"),
                               caption=inputs.caption(
                                   f"Largest distance over replace-one neighbours built to move the TERM minimiser "
                                   f"({int(cfg['rows'])} {cfg['dataset']} rows, μ = {float(cfg['mu']):g}, ‖w‖ ≤ "
                                   f"{float(cfg['radius']):g}), log scale: deterministic solves, no bands. Above the "
                                   "ball's diameter the bound says nothing the constraint does not."))
    return Made(tables={"term-sensitivity": Table(table, note)}, figures={"term-sensitivity": figure})


def _claims(inputs):
    from ...report.products import Made, Table
    from .claims import claims_table

    radii = inputs.spec["test_radii"]
    table = claims_table(inputs.table("compare"), inputs.table("compare-ratios"), inputs.table("rates"),
                         inputs.table("rates-points"), inputs.table("term"), inputs.table("term-sensitivity"),
                         inputs.table("adv"), radii, BLACKBOX_FACTOR)
    return Made(tables={"claims": Table(table, (
        "Each claim of Lowy & Razaviyayn our experiments test (source paper) and the project's own (source ours), "
        "where it is judged, our verdict, the test that decided it and the numbers (rules in "
        "src/dperm/papers/lowy2021/claims.py, predicates in src/dperm/report/claims.py; a verdict resting on a cell "
        "that does not learn is inconclusive)."))})


def _analysis(name):
    return lambda paper: analysis_spec(paper, name)


def _cells_of(name):
    def select(paper):
        from ...grid import cells

        return cells(paper, paper.analyses[name]["experiments"])

    return select


def _claims_spec(paper) -> dict:
    return {"test_radii": _metric_settings(analysis_spec(paper, "adv"), "robust")["test_radii"]}


def _sensitivity_spec(paper) -> dict:
    """The neighbour check's settings and the term experiment's tilts."""
    cfg = paper.analyses["term"]
    tilts = sorted({float(v) for name in cfg["experiments"]
                    for v in (paper.experiments[name].raw.get("sweep") or {}).get("values", [])})
    return {"neighbours": cfg["neighbours"], "tilts": tilts}


def _neighbour_data(paper):
    cfg = paper.analyses["term"]["neighbours"]
    return [(cfg["dataset"], cfg["profile"])]


def _products():
    from ...report.products import Product, Reads

    return (
        Product("compare", make=_compare, tables=("compare", "compare-ratios"),
                figures=("excess-pure", "excess-approx", "cost"), section="1. black box vs conceptual vs prior methods",
                spec=_analysis("compare"), reads=Reads(cells=_cells_of("compare")),
                captions={"compare-ratios": "ratios", "excess-pure": "excess", "excess-approx": "excess"}),
        Product("rates", make=_rates, tables=("rates", "rates-points"), figures=("rates-n", "rates-d"),
                section="2. rates", spec=_analysis("rates"), reads=Reads(cells=_cells_of("rates"))),
        Product("term", make=_term, tables=("term",), figures=("term", "term-noise"), section="3. tilted ERM",
                spec=_analysis("term"), reads=Reads(cells=_cells_of("term"))),
        Product("adv", make=_adv, tables=("adv",), figures=("adv",), section="4. adversarial training",
                spec=_analysis("adv"), reads=Reads(cells=_cells_of("adv"))),
        Product("term-sensitivity", make=_term_sensitivity, tables=("term-sensitivity",),
                figures=("term-sensitivity",), section="3. tilted ERM", spec=_sensitivity_spec,
                reads=Reads(prepared=_neighbour_data)),
        Product("claims", make=_claims, tables=("claims",), section="5. claims", spec=_claims_spec,
                reads=Reads(tables=("compare", "compare-ratios", "rates", "rates-points", "term", "term-sensitivity",
                                    "adv"))),
    )


PRODUCTS = _products()
