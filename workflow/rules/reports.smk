# Experiment summaries and the figures a paper's config declares (generic: no paper named).


rule summarise:
    input:
        lambda wildcards: experiment_cells(wildcards.paper, wildcards.experiment),
    output:
        csv=f"{OUT}results/summaries/{{paper}}/{{experiment}}.csv",
        md=f"{OUT}results/summaries/{{paper}}/{{experiment}}.md",
        html=report(
            f"{OUT}results/summaries/{{paper}}/{{experiment}}.html",
            caption="../report/summary_table.rst",
            category=lambda wildcards: report_category(wildcards.paper),
            subcategory="summaries",
        ),
    log:
        f"{OUT}logs/summaries/{{paper}}/{{experiment}}.log",
    benchmark:
        f"{OUT}benchmarks/out/summaries/{{paper}}/{{experiment}}.tsv"
    group:
        cluster_group("summary")
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("summary"),
    params:
        spec=summary_spec,
        title=lambda wildcards: json.loads(summary_spec(wildcards))["title"],
        quick=quick_flag(),
        code=CODE["report"],
    shell:
        "python -m dperm summarise {input} --csv {output.csv} --md {output.md} --html {output.html}"
        " --title {params.title:q} {params.quick} > {log} 2>&1"


rule figure:
    input:
        figure_summaries,
    output:
        png=report(
            f"{OUT}figures/{{paper}}/{{figure}}.png",
            caption="../report/figure.rst",
            category=lambda wildcards: report_category(wildcards.paper),
            subcategory="figures",
        ),
        pdf=f"{OUT}figures/{{paper}}/{{figure}}.pdf",
    log:
        f"{OUT}logs/figures/{{paper}}/{{figure}}.log",
    benchmark:
        f"{OUT}benchmarks/out/figures/{{paper}}/{{figure}}.tsv"
    # Only the figures a paper declares under `figures:`; figures a paper draws with its own rules
    # are not candidates, so their names never reach the lookup below.
    wildcard_constraints:
        figure=_alternatives({name for paper in PAPERS.values() for name in paper.figures})
        or "(?!)",
    group:
        cluster_group("product")
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("product"),
    params:
        spec=figure_spec_json,
        code=CODE["report"],
    shell:
        "python -m dperm figure --spec {params.spec:q} --summary {input}"
        " --png {output.png} --pdf {output.pdf} > {log} 2>&1"


# The scorecard is no member of the "report" group (a cluster job of its own): it reads the papers'
# tables, which read summaries of that group; a group may not feed itself through outside jobs.
rule scorecard:
    """results/SCORECARD.md and the report's first page: per paper, published numbers beside ours,
    claims and verdicts, deviations, record labels and the audit (dperm.report.scorecard)."""
    input:
        tables=list(scorecard_tables().values()),
        summaries=scorecard_summaries(),
        audit=f"{OUT}results/audit/audit.csv",
        docs=["docs/deviations.md", "docs/privacy.md"],
    output:
        md=f"{OUT}results/SCORECARD.md",
        html=report(
            f"{OUT}results/scorecard.html",
            caption="../report/scorecard.rst",
            category=SCORECARD_CATEGORY,
        ),
    log:
        f"{OUT}logs/scorecard.log",
    benchmark:
        f"{OUT}benchmarks/out/scorecard.tsv"
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("product"),
    params:
        spec=scorecard_spec_json(),
        tables=" ".join(f"--table {k}={v}" for k, v in scorecard_tables().items()),
        code=CODE["report"] + source_fingerprint("papers"),
    shell:
        "python -m dperm scorecard --spec {params.spec:q} {params.tables} --summaries {input.summaries}"
        " --audit {input.audit} --docs {input.docs} --md {output.md} --html {output.html} > {log} 2>&1"
