# Zhang et al. 2017 (src/dperm/papers/zhang2017/, docs/papers/zhang2017.md): Table 3 beside the
# published numbers, the claims check, the error figure, the Table 2 analogue, RRPSGD, the paper
# target (zhang2017) and the runtime target (zhang2017-runtime).
ZHANG = PAPERS["zhang2017"]
ZHANG_ANALYSES = ZHANG["analyses"]
ZHANG_CODE = source_fingerprint("papers/zhang2017", "report")


def zhang_cells(analysis):
    return [
        path
        for experiment in ZHANG_ANALYSES[analysis]["experiments"]
        for path in experiment_cells("zhang2017", experiment)
    ]


def zhang_spec(analysis):
    """What an analysis reads from the config: its experiments, their algorithms and models."""
    cfg = ZHANG_ANALYSES[analysis]
    exps = {name: ZHANG["experiments"][name] for name in cfg["experiments"]}
    keys = sorted({key for exp in exps.values() for key in exp["algorithms"]})
    return experiments.dumps(
        {
            **cfg,
            "experiments": exps,
            "algorithms": {key: ZHANG["algorithms"][key] for key in keys},
            "models": ZHANG["models"],
            "batch_size": ZHANG["algorithms"]["bassily-sgd"].get("batch_size", 50),
        }
    )


def zhang_table2_inputs():
    datasets = [
        d
        for name in ZHANG_ANALYSES["table3"]["experiments"]
        for d in ZHANG["experiments"][name]["datasets"]
        if dataset_available(d)
    ]
    return [f"resources/prepared/{d}/{ZHANG['experiments']['table3']['profile']}.json" for d in datasets]


rule zhang2017_table3:
    input:
        zhang_cells("table3"),
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/table3.csv",
            caption=paper_caption("zhang2017", "table3"),
            category="zhang2017",
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/table3.md",
    params:
        spec=zhang_spec("table3"),
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/table3.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 table3 {input} --spec {params.spec:q}"
        " --csv {output.csv} --md {output.md} {params.quick} > {log} 2>&1"


rule zhang2017_claims:
    input:
        f"{OUT}results/tables/zhang2017/table3.csv",
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/claims.csv",
            caption=paper_caption("zhang2017", "claims"),
            category="zhang2017",
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/claims.md",
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/claims.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 claims {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule zhang2017_error_figure:
    input:
        f"{OUT}results/tables/zhang2017/table3.csv",
    output:
        png=report(
            f"{OUT}figures/zhang2017/error.png",
            caption=paper_caption("zhang2017", "error"),
            category="zhang2017",
            subcategory="figures",
        ),
        pdf=f"{OUT}figures/zhang2017/error.pdf",
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/error_figure.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 figure {input} --png {output.png} --pdf {output.pdf} {params.quick}"
        " > {log} 2>&1"


rule zhang2017_table2:
    input:
        zhang_table2_inputs(),
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/table2.csv",
            caption=paper_caption("zhang2017", "table2"),
            category="zhang2017",
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/table2.md",
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/table2.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 table2 {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule zhang2017_rrpsgd:
    input:
        zhang_cells("rrpsgd"),
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/rrpsgd.csv",
            caption=paper_caption("zhang2017", "rrpsgd"),
            category="zhang2017",
            subcategory="RRPSGD",
        ),
        md=f"{OUT}results/tables/zhang2017/rrpsgd.md",
        png=report(
            f"{OUT}figures/zhang2017/rrpsgd.png",
            caption=paper_caption("zhang2017", "rrpsgd"),
            category="zhang2017",
            subcategory="RRPSGD",
        ),
        pdf=f"{OUT}figures/zhang2017/rrpsgd.pdf",
    params:
        spec=zhang_spec("rrpsgd"),
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/rrpsgd.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 rrpsgd {input} --spec {params.spec:q} --csv {output.csv}"
        " --md {output.md} --png {output.png} --pdf {output.pdf} {params.quick} > {log} 2>&1"


rule zhang2017_runtime_table:
    input:
        zhang_cells("runtime"),
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/runtime.csv",
            caption=paper_caption("zhang2017", "runtime"),
            category="zhang2017",
            subcategory="runtime (theorem settings)",
        ),
        md=f"{OUT}results/tables/zhang2017/runtime.md",
    params:
        spec=zhang_spec("runtime"),
        quick=quick_flag(),
        code=ZHANG_CODE,
    log:
        f"{OUT}logs/zhang2017/runtime.log",
    conda:
        "../../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 runtime {input} --spec {params.spec:q}"
        " --csv {output.csv} --md {output.md} {params.quick} > {log} 2>&1"


rule zhang2017:
    """Every output of Zhang et al. 2017 but the runtime runs (see config/papers/zhang2017.yaml)."""
    input:
        paper_outputs("zhang2017"),
        [
            f"{OUT}results/tables/zhang2017/{name}.{ext}"
            for name in ("table3", "claims", "table2", "rrpsgd")
            for ext in ("csv", "md")
        ],
        [f"{OUT}figures/zhang2017/{name}.{ext}" for name in ("error", "rrpsgd") for ext in ("png", "pdf")],


rule zhang2017_runtime:
    """Both algorithms at the theorems' settings (Bassily et al. at T = n^2/m): about an hour on
    2 cores. Invoke as `snakemake --cores 2 zhang2017-runtime`."""
    name:
        "zhang2017-runtime"
    input:
        [f"{OUT}results/tables/zhang2017/runtime.{ext}" for ext in ("csv", "md")],
