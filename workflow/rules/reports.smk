# Experiment summaries and the figures a paper's config declares (generic: no paper named).


rule summarise:
    input:
        lambda wildcards: experiment_cells(wildcards.paper, wildcards.experiment),
    output:
        csv=report(
            f"{OUT}results/summaries/{{paper}}/{{experiment}}.csv",
            caption="../report/summary_table.rst",
            category="{paper}",
            subcategory="summaries",
        ),
        md=f"{OUT}results/summaries/{{paper}}/{{experiment}}.md",
    log:
        f"{OUT}logs/summaries/{{paper}}/{{experiment}}.log",
    conda:
        "../envs/dperm.yaml"
    params:
        spec=summary_spec,
        title=lambda wildcards: json.loads(summary_spec(wildcards))["title"],
        quick=quick_flag(),
        code=CODE["report"],
    shell:
        "python -m dperm summarise {input} --csv {output.csv} --md {output.md}"
        " --title {params.title:q} {params.quick} > {log} 2>&1"


rule figure:
    input:
        figure_summaries,
    output:
        png=report(
            f"{OUT}figures/{{paper}}/{{figure}}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="figures",
        ),
        pdf=f"{OUT}figures/{{paper}}/{{figure}}.pdf",
    log:
        f"{OUT}logs/figures/{{paper}}/{{figure}}.log",
    # Only the figures a paper declares under `figures:`; figures a paper draws with its own rules
    # are not candidates, so their names never reach the lookup below.
    wildcard_constraints:
        figure=_alternatives({name for paper in PAPERS.values() for name in paper["figures"]})
        or "(?!)",
    conda:
        "../envs/dperm.yaml"
    params:
        spec=figure_spec_json,
        code=CODE["report"],
    shell:
        "python -m dperm figure --spec {params.spec:q} --summary {input}"
        " --png {output.png} --pdf {output.pdf} > {log} 2>&1"
