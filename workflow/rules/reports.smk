# Tables, figures and the per-paper targets.


rule summary_table:
    input:
        lambda wildcards: experiment_cells(wildcards.paper, wildcards.experiment),
    output:
        csv=report(
            "results/tables/{paper}/{experiment}.csv",
            caption="../report/summary_table.rst",
            category="{paper}",
            subcategory="tables",
        ),
        md="results/tables/{paper}/{experiment}.md",
    params:
        title=lambda wildcards: PAPERS[wildcards.paper]["experiments"][wildcards.experiment].get(
            "title", wildcards.experiment
        ),
        code=CODE["tables"],
    log:
        "logs/tables/{paper}/{experiment}.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm summarise {input} --csv {output.csv} --md {output.md}"
        " --title {params.title:q} > {log} 2>&1"


rule demo:
    """The walking skeleton: DP-SGD, NonPrivate and Majority on one small dataset."""
    input:
        paper_tables("demo") if "demo" in PAPERS else [],
