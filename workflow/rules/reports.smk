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


rule figure:
    input:
        lambda wildcards: figure_tables(wildcards.paper, wildcards.figure),
    output:
        png=report(
            "figures/{paper}/{figure}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="figures",
        ),
        pdf="figures/{paper}/{figure}.pdf",
    # Only the figures a paper declares under `figures:`; the papers' own figure rules (e.g.
    # zhang2017's error figure) are not candidates, so their names never reach the lookup below.
    wildcard_constraints:
        figure=_alternatives({name for paper in PAPERS.values() for name in paper.get("figures", {})})
        or "(?!)",
    params:
        paper=lambda wildcards: paper_file(wildcards.paper),
        spec=lambda wildcards: experiments.dumps(PAPERS[wildcards.paper]["figures"][wildcards.figure]),
        unavailable=lambda wildcards: unavailable_json(
            figure_datasets(wildcards.paper, wildcards.figure)
        ),
        code=CODE["figures"],
    log:
        "logs/figures/{paper}/{figure}.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm figure --paper {params.paper} --figure {wildcards.figure}"
        " --summary {input} --unavailable {params.unavailable:q}"
        " --png {output.png} --pdf {output.pdf} > {log} 2>&1"


rule demo:
    """The walking skeleton: DP-SGD, NonPrivate and Majority on one small dataset."""
    input:
        paper_outputs("demo") if "demo" in PAPERS else [],
