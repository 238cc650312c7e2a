# The black-box privacy audit of every registered private algorithm and of mutants built to be
# caught (dperm.audit). Target: snakemake --cores 2 audit


rule audit_subject:
    output:
        csv=f"{OUT}results/audit/subjects/{{subject}}.csv",
        usage=f"{OUT}results/audit/subjects/{{subject}}.usage.json",
    log:
        f"{OUT}logs/audit/{{subject}}.log",
    benchmark:
        f"{OUT}benchmarks/out/audit/{{subject}}.tsv"
    priority: chain_priority("audit")
    group:
        cluster_group("audit")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("audit"),
    params:
        seed=config["audit"]["seed"],
        scale=config["audit"]["scale"],
        code=audit_code,
    shell:
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} audit-subject"
        " --subject {wildcards.subject} --seed {params.seed} --scale {params.scale} --out {output.csv}"


rule audit_table:
    input:
        [f"{OUT}results/audit/subjects/{name}.csv" for name in AUDIT_SUBJECTS],
    output:
        csv=f"{OUT}results/audit/audit.csv",
        md=f"{OUT}results/audit/audit.md",
        html=report(
            f"{OUT}results/audit/audit.html",
            caption="../report/audit.rst",
            category=AUDIT_CATEGORY,
        ),
        mutation_csv=f"{OUT}results/audit/mutation.csv",
        mutation_md=f"{OUT}results/audit/mutation.md",
        mutation_html=report(
            f"{OUT}results/audit/mutation.html",
            caption="../report/audit_mutation.rst",
            category=AUDIT_CATEGORY,
        ),
        summary_csv=f"{OUT}results/audit/summary.csv",
        summary_md=f"{OUT}results/audit/summary.md",
        summary_html=f"{OUT}results/audit/summary.html",
        png=report(
            f"{OUT}figures/audit/audit.png",
            caption="../report/audit.rst",
            category=AUDIT_CATEGORY,
        ),
        pdf=f"{OUT}figures/audit/audit.pdf",
    log:
        f"{OUT}logs/audit/table.log",
    benchmark:
        f"{OUT}benchmarks/out/audit_table.tsv"
    group:
        cluster_group("product")
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("product"),
    params:
        enforce="--enforce" if config["audit"]["enforce"] else "",
        quick=quick_flag(),
        code=CODE["report"],
    shell:
        "python -m dperm audit-table {input} --csv {output.csv} --md {output.md} --html {output.html}"
        " --png {output.png} --pdf {output.pdf}"
        " --mutation-csv {output.mutation_csv} --mutation-md {output.mutation_md} --mutation-html {output.mutation_html}"
        " --summary-csv {output.summary_csv} --summary-md {output.summary_md} --summary-html {output.summary_html}"
        " {params.enforce} {params.quick} > {log} 2>&1"


rule audit_one_run:
    output:
        csv=f"{OUT}results/audit/one_run.csv",
        md=f"{OUT}results/audit/one_run.md",
        html=report(
            f"{OUT}results/audit/one_run.html",
            caption="../report/audit_one_run.rst",
            category=AUDIT_CATEGORY,
        ),
        calibration_csv=f"{OUT}results/audit/one_run_calibration.csv",
        calibration_md=f"{OUT}results/audit/one_run_calibration.md",
        usage=f"{OUT}results/audit/one_run.usage.json",
    log:
        f"{OUT}logs/audit/one_run.log",
    benchmark:
        f"{OUT}benchmarks/out/audit/one_run.tsv"
    conda:
        "../envs/dperm.yaml"
    threads: 1
    # sized as a fit, not as an audit case: twelve trainings at Adult's scale, 1 GB at its peak
    resources:
        **cluster_resources("fit"),
    params:
        seed=config["audit"]["seed"],
        scale=config["audit"]["scale"],
        quick=quick_flag(),
        code=audit_one_run_code,
    shell:
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} audit-one-run --seed {params.seed}"
        " --scale {params.scale} --csv {output.csv} --md {output.md} --html {output.html}"
        " --calibration-csv {output.calibration_csv} --calibration-md {output.calibration_md} {params.quick}"


rule audit:
    """Every algorithm audited, its mutants and the controls: results/audit/{audit,mutation,summary,one_run}.*,
    figures/audit/."""
    input:
        rules.audit_table.output,
        rules.audit_one_run.output,
