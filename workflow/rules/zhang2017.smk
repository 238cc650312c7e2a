# Zhang et al. 2017: Table 3 beside the published numbers, the claims check, the error figure,
# RRPSGD, the Table 2 analogue, the paper target (zhang2017) and the runtime target
# (zhang2017-runtime).

ZHANG_TABLES = [
    f"results/tables/zhang2017/{name}.{ext}"
    for name in ("table3", "claims", "table2", "rrpsgd")
    for ext in ("csv", "md")
]
ZHANG_FIGURES = [f"figures/zhang2017/{name}.{ext}" for name in ("error", "rrpsgd") for ext in ("png", "pdf")]


# The paper's Table 3 (published numbers, ratios) stands in for the generic summary of the table3
# experiment, whose path it takes.
ruleorder: zhang2017_table3 > summary_table


rule zhang2017_table3:
    input:
        cells=zhang_table3_cells,
        published=zhang_analysis("table3").get("published", []),
    output:
        csv=report(
            "results/tables/zhang2017/table3.csv",
            caption="../report/zhang2017_table3.rst",
            category="zhang2017",
            subcategory="tables",
        ),
        md="results/tables/zhang2017/table3.md",
    params:
        paper=ZHANG_FILE,
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/table3.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 table3 {input.cells} --paper {params.paper}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule zhang2017_claims:
    input:
        "results/tables/zhang2017/table3.csv",
    output:
        csv=report(
            "results/tables/zhang2017/claims.csv",
            caption="../report/zhang2017_claims.rst",
            category="zhang2017",
            subcategory="tables",
        ),
        md="results/tables/zhang2017/claims.md",
    params:
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/claims.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 claims {input} --csv {output.csv} --md {output.md} > {log} 2>&1"


rule zhang2017_error_figure:
    input:
        "results/tables/zhang2017/table3.csv",
    output:
        png=report(
            "figures/zhang2017/error.png",
            caption="../report/zhang2017_error.rst",
            category="zhang2017",
            subcategory="figures",
        ),
        pdf="figures/zhang2017/error.pdf",
    params:
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/error_figure.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 figure {input} --png {output.png} --pdf {output.pdf} > {log} 2>&1"


rule zhang2017_table2:
    input:
        lambda wildcards: [f"resources/prepared/{d}/zhang.json" for d in zhang_table3_datasets()],
    output:
        csv=report(
            "results/tables/zhang2017/table2.csv",
            caption="../report/zhang2017_table2.rst",
            category="zhang2017",
            subcategory="tables",
        ),
        md="results/tables/zhang2017/table2.md",
    params:
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/table2.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 table2 {input} --csv {output.csv} --md {output.md} > {log} 2>&1"


rule zhang2017_rrpsgd_run:
    input:
        data=lambda wildcards: prepared(
            zhang_analysis("rrpsgd")["dataset"], zhang_analysis("rrpsgd")["profile"]
        ),
    output:
        "results/zhang2017/rrpsgd/{noise}/eps{epsilon}.csv",
    wildcard_constraints:
        noise="theorem4|calibrated",
    params:
        paper=ZHANG_FILE,
        settings=experiments.dumps(zhang_analysis("rrpsgd")),
        seed=config["seed"],
        code=ZHANG_RUN_CODE,
    log:
        "logs/zhang2017/rrpsgd/{noise}/eps{epsilon}.log",
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} zhang2017 rrpsgd-run --paper {params.paper}"
        " --data {input.data} --noise {wildcards.noise} --epsilon {wildcards.epsilon}"
        " --seed {params.seed} --out {output} > {log} 2>&1"


rule zhang2017_rrpsgd:
    input:
        zhang_rrpsgd_runs(),
    output:
        csv=report(
            "results/tables/zhang2017/rrpsgd.csv",
            caption="../report/zhang2017_rrpsgd.rst",
            category="zhang2017",
            subcategory="RRPSGD",
        ),
        md="results/tables/zhang2017/rrpsgd.md",
        png=report(
            "figures/zhang2017/rrpsgd.png",
            caption="../report/zhang2017_rrpsgd.rst",
            category="zhang2017",
            subcategory="RRPSGD",
        ),
        pdf="figures/zhang2017/rrpsgd.pdf",
    params:
        paper=ZHANG_FILE,
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/rrpsgd.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 rrpsgd {input} --paper {params.paper} --csv {output.csv}"
        " --md {output.md} --png {output.png} --pdf {output.pdf} > {log} 2>&1"


rule zhang2017_runtime_run:
    """One runtime run at the theorems' settings (Bassily et al. uncapped: up to 41M steps)."""
    input:
        data=lambda wildcards: prepared(
            wildcards.dataset,
            experiments.experiment_profile(
                ZHANG, zhang_experiment_of(wildcards.dataset), wildcards.algorithm
            ),
        ),
        optima=lambda wildcards: list(zhang_optima(wildcards.dataset).values()),
    output:
        "results/zhang2017/runtime/{dataset}/{algorithm}/run{run}.csv",
    wildcard_constraints:
        algorithm="outpert-gd|bassily-sgd",
        run="[0-9]+",
    params:
        paper=ZHANG_FILE,
        optima=lambda wildcards: " ".join(
            f"--optimum {m}={p}" for m, p in zhang_optima(wildcards.dataset).items()
        ),
        settings=experiments.dumps(zhang_analysis("runtime")),
        seed=config["seed"],
        code=ZHANG_RUN_CODE,
    log:
        "logs/zhang2017/runtime/{dataset}/{algorithm}/run{run}.log",
    priority: zhang_runtime_priority
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} zhang2017 runtime-run --paper {params.paper}"
        " --data {input.data} --dataset {wildcards.dataset} --algorithm {wildcards.algorithm}"
        " --run {wildcards.run} --seed {params.seed} {params.optima} --out {output} > {log} 2>&1"


rule zhang2017_runtime_table:
    input:
        zhang_runtime_runs(),
    output:
        csv=report(
            "results/tables/zhang2017/runtime.csv",
            caption="../report/zhang2017_runtime.rst",
            category="zhang2017",
            subcategory="runtime (theorem settings)",
        ),
        md="results/tables/zhang2017/runtime.md",
    params:
        paper=ZHANG_FILE,
        code=ZHANG_CODE,
    log:
        "logs/zhang2017/runtime.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm zhang2017 runtime {input} --paper {params.paper}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule zhang2017:
    """Every output of Zhang et al. 2017 but the runtime runs (see config/papers/zhang2017.yaml)."""
    input:
        (paper_outputs("zhang2017") + ZHANG_TABLES + ZHANG_FIGURES) if ZHANG else [],


rule zhang2017_runtime:
    """Both algorithms at the theorems' settings (Bassily et al. at T = n^2/m); ~1 hour on 2 cores.
    Invoke as `snakemake --cores 2 zhang2017-runtime`."""
    name:
        "zhang2017-runtime"
    input:
        ["results/tables/zhang2017/runtime.csv", "results/tables/zhang2017/runtime.md"] if ZHANG else [],
