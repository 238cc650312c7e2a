# Zhang et al. 2017 (src/dperm/papers/zhang2017/, docs/papers/zhang2017.md): Table 3 beside the
# published numbers, the claims check, the error figure, the Table 2 analogue, RRPSGD, the paper
# target (zhang2017) and the runtime target (zhang2017-runtime).
ZHANG = PAPERS["zhang2017"]
ZHANG_CODE = source_fingerprint("papers/zhang2017", "report")
ZHANG_CELLS = {
    name: [cell for exp in cfg["experiments"] for cell in experiment_cells("zhang2017", exp)]
    for name, cfg in ZHANG["analyses"].items()
}
ZHANG_SPECS = {
    name: experiments.dumps(papers.plugin("zhang2017").analysis_spec(ZHANG, name))
    for name in ZHANG["analyses"]
}
ZHANG_TABLE3_PROVENANCE = [
    f"resources/prepared/{d}/{ZHANG['experiments'][exp]['profile']}.json"
    for exp in ZHANG["analyses"]["table3"]["experiments"]
    for d in ZHANG["experiments"][exp]["datasets"]
    if dataset_available(d)
]


rule zhang2017_table3:
    input:
        ZHANG_CELLS["table3"],
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/table3.csv",
            caption=paper_caption("zhang2017", "table3"),
            category=report_category("zhang2017"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/table3.md",
    log:
        f"{OUT}logs/zhang2017/table3.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=ZHANG_SPECS["table3"],
        quick=quick_flag(),
        code=ZHANG_CODE,
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
            category=report_category("zhang2017"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/claims.md",
    log:
        f"{OUT}logs/zhang2017/claims.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
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
            category=report_category("zhang2017"),
            subcategory="figures",
        ),
        pdf=f"{OUT}figures/zhang2017/error.pdf",
    log:
        f"{OUT}logs/zhang2017/error_figure.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
    shell:
        "python -m dperm zhang2017 figure {input} --png {output.png} --pdf {output.pdf} {params.quick}"
        " > {log} 2>&1"


rule zhang2017_table2:
    input:
        ZHANG_TABLE3_PROVENANCE,
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/table2.csv",
            caption=paper_caption("zhang2017", "table2"),
            category=report_category("zhang2017"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/zhang2017/table2.md",
    log:
        f"{OUT}logs/zhang2017/table2.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=ZHANG_CODE,
    shell:
        "python -m dperm zhang2017 table2 {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule zhang2017_rrpsgd:
    input:
        ZHANG_CELLS["rrpsgd"],
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/rrpsgd.csv",
            caption=paper_caption("zhang2017", "rrpsgd"),
            category=report_category("zhang2017"),
            subcategory="RRPSGD",
        ),
        md=f"{OUT}results/tables/zhang2017/rrpsgd.md",
        png=report(
            f"{OUT}figures/zhang2017/rrpsgd.png",
            caption=paper_caption("zhang2017", "rrpsgd"),
            category=report_category("zhang2017"),
            subcategory="RRPSGD",
        ),
        pdf=f"{OUT}figures/zhang2017/rrpsgd.pdf",
    log:
        f"{OUT}logs/zhang2017/rrpsgd.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=ZHANG_SPECS["rrpsgd"],
        quick=quick_flag(),
        code=ZHANG_CODE,
    shell:
        "python -m dperm zhang2017 rrpsgd {input} --spec {params.spec:q} --csv {output.csv}"
        " --md {output.md} --png {output.png} --pdf {output.pdf} {params.quick} > {log} 2>&1"


rule zhang2017_runtime_table:
    input:
        ZHANG_CELLS["runtime"],
    output:
        csv=report(
            f"{OUT}results/tables/zhang2017/runtime.csv",
            caption=paper_caption("zhang2017", "runtime"),
            category=report_category("zhang2017"),
            subcategory="runtime (theorem settings)",
        ),
        md=f"{OUT}results/tables/zhang2017/runtime.md",
    log:
        f"{OUT}logs/zhang2017/runtime.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=ZHANG_SPECS["runtime"],
        quick=quick_flag(),
        code=ZHANG_CODE,
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
        [
            f"{OUT}figures/zhang2017/{name}.{ext}"
            for name in ("error", "rrpsgd")
            for ext in ("png", "pdf")
        ],


rule zhang2017_runtime:
    """Both algorithms at the theorems' settings (Bassily et al. at T = n^2/m): about an hour on
    2 cores. Invoke as `snakemake --cores 2 zhang2017-runtime`."""
    name:
        "zhang2017-runtime"
    input:
        [f"{OUT}results/tables/zhang2017/runtime.{ext}" for ext in ("csv", "md")],
