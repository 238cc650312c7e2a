# Lowy & Razaviyayn (src/dperm/papers/lowy2021/, docs/papers/lowy2021.md): the comparison tables
# and figures from the compare cells; the paper's own evaluation of the rates, tilted-ERM and
# adversarial experiments (their fits measured on held-out data, groups and attacks); the rates,
# tilted-ERM, adversarial and claims tables; the paper target (lowy2021).
LOWY = PAPERS["lowy2021"]
LOWY_PLUGIN = papers.plugin("lowy2021")
LOWY_CODE = source_fingerprint("papers/lowy2021", "report")
# The evaluation jobs rerun when their fits or metrics change, not when a table does.
LOWY_EVAL_CODE = source_fingerprint("papers/lowy2021/evaluate")
LOWY_EVAL = LOWY_PLUGIN.evaluation_jobs(LOWY, config["seed"])
LOWY_SPECS = {
    name: experiments.dumps(LOWY_PLUGIN.analysis_spec(LOWY, name))
    for name in ("compare", "rates", "term", "adv")
}
LOWY_COMPARE_CELLS = [
    cell
    for exp in LOWY["analyses"]["compare"]["experiments"]
    for cell in experiment_cells("lowy2021", exp)
]
LOWY_EVALUATED = {
    name: LOWY_PLUGIN.evaluated_files(LOWY, name, OUT) for name in ("rates", "term", "adv")
}


rule lowy2021_evaluate:
    """One analysis's fits on one dataset, measured on what the generic records lack
    (population sample, sex x race groups, attacks of several radii)."""
    input:
        data=lambda w: prepared(w.dataset, LOWY_EVAL[(w.analysis, w.dataset)]["profile"]),
        population=lambda w: (
            [
                prepared(
                    LOWY_EVAL[(w.analysis, w.dataset)]["population"],
                    LOWY_EVAL[(w.analysis, w.dataset)]["profile"],
                )
            ]
            if LOWY_EVAL[(w.analysis, w.dataset)]["population"]
            else []
        ),
    output:
        f"{OUT}results/lowy2021/evaluate/{{analysis}}/{{dataset}}.csv",
    log:
        f"{OUT}logs/lowy2021/evaluate/{{analysis}}/{{dataset}}.log",
    benchmark:
        f"{OUT}benchmarks/out/lowy2021/evaluate/{{analysis}}/{{dataset}}.tsv"
    wildcard_constraints:
        analysis=_alternatives({name for name, _ in LOWY_EVAL}) or "(?!)",
    conda:
        "../../envs/dperm.yaml"
    threads: 1
    params:
        specs=lambda w: experiments.dumps(LOWY_EVAL[(w.analysis, w.dataset)]["specs"]),
        analysis=lambda w: experiments.dumps(LOWY_EVAL[(w.analysis, w.dataset)]["analysis"]),
        population=lambda w, input: (
            f"--population {input.population[0]}" if input.population else ""
        ),
        code=lambda w: algorithm_fingerprint(*LOWY_EVAL[(w.analysis, w.dataset)]["algorithms"])
        + LOWY_EVAL_CODE,
    shell:
        "python -m dperm --threads {threads} lowy2021 evaluate --spec {params.specs:q}"
        " --analysis {params.analysis:q} --data {input.data} {params.population}"
        " --out {output} > {log} 2>&1"


rule lowy2021_compare:
    input:
        LOWY_COMPARE_CELLS,
    output:
        csv=report(
            f"{OUT}results/tables/lowy2021/compare.csv",
            caption=paper_caption("lowy2021", "compare"),
            category=report_category("lowy2021"),
            subcategory="1. black box vs conceptual vs prior methods",
        ),
        md=f"{OUT}results/tables/lowy2021/compare.md",
        ratios_csv=report(
            f"{OUT}results/tables/lowy2021/compare-ratios.csv",
            caption=paper_caption("lowy2021", "ratios"),
            category=report_category("lowy2021"),
            subcategory="1. black box vs conceptual vs prior methods",
        ),
        ratios_md=f"{OUT}results/tables/lowy2021/compare-ratios.md",
        pure_png=report(
            f"{OUT}figures/lowy2021/excess-pure.png",
            caption=paper_caption("lowy2021", "excess"),
            category=report_category("lowy2021"),
            subcategory="1. black box vs conceptual vs prior methods",
        ),
        pure_pdf=f"{OUT}figures/lowy2021/excess-pure.pdf",
        approx_png=report(
            f"{OUT}figures/lowy2021/excess-approx.png",
            caption=paper_caption("lowy2021", "excess"),
            category=report_category("lowy2021"),
            subcategory="1. black box vs conceptual vs prior methods",
        ),
        approx_pdf=f"{OUT}figures/lowy2021/excess-approx.pdf",
        cost_png=report(
            f"{OUT}figures/lowy2021/cost.png",
            caption=paper_caption("lowy2021", "cost"),
            category=report_category("lowy2021"),
            subcategory="1. black box vs conceptual vs prior methods",
        ),
        cost_pdf=f"{OUT}figures/lowy2021/cost.pdf",
    log:
        f"{OUT}logs/lowy2021/compare.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=LOWY_SPECS["compare"],
        quick=quick_flag(),
        code=LOWY_CODE,
    shell:
        "python -m dperm lowy2021 compare {input} --spec {params.spec:q} --csv {output.csv} --md {output.md}"
        " --ratios-csv {output.ratios_csv} --ratios-md {output.ratios_md}"
        " --pure-png {output.pure_png} --pure-pdf {output.pure_pdf}"
        " --approx-png {output.approx_png} --approx-pdf {output.approx_pdf}"
        " --cost-png {output.cost_png} --cost-pdf {output.cost_pdf} {params.quick} > {log} 2>&1"


rule lowy2021_rates:
    input:
        LOWY_EVALUATED["rates"],
    output:
        csv=report(
            f"{OUT}results/tables/lowy2021/rates.csv",
            caption=paper_caption("lowy2021", "rates"),
            category=report_category("lowy2021"),
            subcategory="2. rates",
        ),
        md=f"{OUT}results/tables/lowy2021/rates.md",
        points_csv=f"{OUT}results/tables/lowy2021/rates-points.csv",
        points_md=f"{OUT}results/tables/lowy2021/rates-points.md",
        n_png=report(
            f"{OUT}figures/lowy2021/rates-n.png",
            caption=paper_caption("lowy2021", "rates-n"),
            category=report_category("lowy2021"),
            subcategory="2. rates",
        ),
        n_pdf=f"{OUT}figures/lowy2021/rates-n.pdf",
        d_png=report(
            f"{OUT}figures/lowy2021/rates-d.png",
            caption=paper_caption("lowy2021", "rates-d"),
            category=report_category("lowy2021"),
            subcategory="2. rates",
        ),
        d_pdf=f"{OUT}figures/lowy2021/rates-d.pdf",
    log:
        f"{OUT}logs/lowy2021/rates.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=LOWY_SPECS["rates"],
        quick=quick_flag(),
        code=LOWY_CODE,
    shell:
        "python -m dperm lowy2021 rates {input} --spec {params.spec:q} --csv {output.csv} --md {output.md}"
        " --points-csv {output.points_csv} --points-md {output.points_md}"
        " --n-png {output.n_png} --n-pdf {output.n_pdf} --d-png {output.d_png} --d-pdf {output.d_pdf}"
        " {params.quick} > {log} 2>&1"


rule lowy2021_term:
    input:
        LOWY_EVALUATED["term"],
    output:
        csv=report(
            f"{OUT}results/tables/lowy2021/term.csv",
            caption=paper_caption("lowy2021", "term"),
            category=report_category("lowy2021"),
            subcategory="3. tilted ERM",
        ),
        md=f"{OUT}results/tables/lowy2021/term.md",
        png=report(
            f"{OUT}figures/lowy2021/term.png",
            caption=paper_caption("lowy2021", "term"),
            category=report_category("lowy2021"),
            subcategory="3. tilted ERM",
        ),
        pdf=f"{OUT}figures/lowy2021/term.pdf",
        noise_png=report(
            f"{OUT}figures/lowy2021/term-noise.png",
            caption=paper_caption("lowy2021", "term-noise"),
            category=report_category("lowy2021"),
            subcategory="3. tilted ERM",
        ),
        noise_pdf=f"{OUT}figures/lowy2021/term-noise.pdf",
    log:
        f"{OUT}logs/lowy2021/term.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=LOWY_SPECS["term"],
        quick=quick_flag(),
        code=LOWY_CODE,
    shell:
        "python -m dperm lowy2021 term {input} --spec {params.spec:q} --csv {output.csv} --md {output.md}"
        " --png {output.png} --pdf {output.pdf} --noise-png {output.noise_png} --noise-pdf {output.noise_pdf}"
        " {params.quick} > {log} 2>&1"


rule lowy2021_adv:
    input:
        LOWY_EVALUATED["adv"],
    output:
        csv=report(
            f"{OUT}results/tables/lowy2021/adv.csv",
            caption=paper_caption("lowy2021", "adv"),
            category=report_category("lowy2021"),
            subcategory="4. adversarial training",
        ),
        md=f"{OUT}results/tables/lowy2021/adv.md",
        png=report(
            f"{OUT}figures/lowy2021/adv.png",
            caption=paper_caption("lowy2021", "adv"),
            category=report_category("lowy2021"),
            subcategory="4. adversarial training",
        ),
        pdf=f"{OUT}figures/lowy2021/adv.pdf",
    log:
        f"{OUT}logs/lowy2021/adv.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=LOWY_SPECS["adv"],
        quick=quick_flag(),
        code=LOWY_CODE,
    shell:
        "python -m dperm lowy2021 adv {input} --spec {params.spec:q} --csv {output.csv} --md {output.md}"
        " --png {output.png} --pdf {output.pdf} {params.quick} > {log} 2>&1"


rule lowy2021_claims:
    input:
        ratios=f"{OUT}results/tables/lowy2021/compare-ratios.csv",
        slopes=f"{OUT}results/tables/lowy2021/rates.csv",
        points=f"{OUT}results/tables/lowy2021/rates-points.csv",
        term=f"{OUT}results/tables/lowy2021/term.csv",
        adv=f"{OUT}results/tables/lowy2021/adv.csv",
    output:
        csv=report(
            f"{OUT}results/tables/lowy2021/claims.csv",
            caption=paper_caption("lowy2021", "claims"),
            category=report_category("lowy2021"),
            subcategory="5. claims",
        ),
        md=f"{OUT}results/tables/lowy2021/claims.md",
    log:
        f"{OUT}logs/lowy2021/claims.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=LOWY_SPECS["adv"],
        quick=quick_flag(),
        code=LOWY_CODE,
    shell:
        "python -m dperm lowy2021 claims --ratios {input.ratios} --slopes {input.slopes} --points {input.points} --term {input.term}"
        " --adv {input.adv} --spec {params.spec:q} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule lowy2021:
    """Every output of Lowy & Razaviyayn (see config/papers/lowy2021.yaml)."""
    input:
        paper_outputs("lowy2021"),
        [
            f"{OUT}results/tables/lowy2021/{name}.{ext}"
            for name in (
                "compare",
                "compare-ratios",
                "rates",
                "rates-points",
                "term",
                "adv",
                "claims",
            )
            for ext in ("csv", "md")
        ],
        [
            f"{OUT}figures/lowy2021/{name}.{ext}"
            for name in (
                "excess-pure",
                "excess-approx",
                "cost",
                "rates-n",
                "rates-d",
                "term",
                "term-noise",
                "adv",
            )
            for ext in ("png", "pdf")
        ],
