# The black-box privacy audit of every registered private algorithm and of mutants built to be
# caught (dperm.audit). Target: snakemake --cores 2 audit


rule audit_subject:
    output:
        f"{OUT}results/audit/subjects/{{subject}}.csv",
    log:
        f"{OUT}logs/audit/{{subject}}.log",
    benchmark:
        f"{OUT}benchmarks/out/audit/{{subject}}.tsv"
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
        "python -m dperm --threads {threads} audit-subject --subject {wildcards.subject}"
        " --seed {params.seed} --scale {params.scale} --out {output} > {log} 2>&1"


rule audit_table:
    input:
        [f"{OUT}results/audit/subjects/{name}.csv" for name in AUDIT_SUBJECTS],
    output:
        csv=report(
            f"{OUT}results/audit/audit.csv",
            caption="../report/audit.rst",
            category=AUDIT_CATEGORY,
        ),
        md=f"{OUT}results/audit/audit.md",
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
        "python -m dperm audit-table {input} --csv {output.csv} --md {output.md} --png {output.png}"
        " --pdf {output.pdf} {params.enforce} {params.quick} > {log} 2>&1"


rule audit:
    """Every algorithm audited, the controls caught: results/audit/audit.{csv,md}, figures/audit/."""
    input:
        rules.audit_table.output,
