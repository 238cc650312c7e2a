# Lee & Kifer 2018: the tables that are not grids of cells, the claims check, the paper target.
LEE = PAPERS.get("lee2018")


rule lee2018_table1:
    input:
        data=prepared("adult"),
        published="config/published/lee2018_table1.csv",
    output:
        csv=report(
            "results/tables/lee2018/table1.csv",
            caption="../report/lee2018_table1.rst",
            category="lee2018",
            subcategory="tables",
        ),
        md="results/tables/lee2018/table1.md",
    params:
        paper=paper_file("lee2018"),
        settings=experiments.dumps(LEE["analyses"].get("table1", {})) if LEE else "",
        code=CODE["papers"],
    log:
        "logs/lee2018/table1.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm lee2018 table1 {input.data} {input.published} --paper {params.paper}"
        " --csv {output.csv} --md {output.md} > {log} 2>&1"


rule lee2018_table2:
    input:
        "results/tables/datasets.csv",
    output:
        csv=report(
            "results/tables/lee2018/table2.csv",
            caption="../report/lee2018_table2.rst",
            category="lee2018",
            subcategory="tables",
        ),
        md="results/tables/lee2018/table2.md",
    params:
        code=CODE["papers"],
    log:
        "logs/lee2018/table2.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm lee2018 table2 {input} --csv {output.csv} --md {output.md} > {log} 2>&1"


rule lee2018_claims:
    input:
        "results/tables/lee2018/fig2.csv",
        "results/tables/lee2018/fig3.csv",
    output:
        csv=report(
            "results/tables/lee2018/claims.csv",
            caption="../report/lee2018_claims.rst",
            category="lee2018",
            subcategory="tables",
        ),
        md="results/tables/lee2018/claims.md",
    params:
        code=CODE["papers"],
    log:
        "logs/lee2018/claims.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm lee2018 claims {input} --csv {output.csv} --md {output.md} > {log} 2>&1"


rule lee2018:
    """Every table and figure of Lee & Kifer 2018 (see config/papers/lee2018.yaml)."""
    input:
        (
            paper_outputs("lee2018")
            + [
                f"results/tables/lee2018/{name}.{ext}"
                for name in ("table1", "table2", "claims")
                for ext in ("csv", "md")
            ]
        )
        if LEE
        else [],
