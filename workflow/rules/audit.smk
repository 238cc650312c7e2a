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
    conda:
        "../envs/dperm.yaml"
    threads: 1
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
        png=report(
            f"{OUT}figures/audit/audit.png",
            caption="../report/audit.rst",
            category=AUDIT_CATEGORY,
        ),
        pdf=f"{OUT}figures/audit/audit.pdf",
    log:
        f"{OUT}logs/audit/table.log",
    conda:
        "../envs/dperm.yaml"
    params:
        enforce="--enforce" if config["audit"]["enforce"] else "",
        quick=quick_flag(),
        code=CODE["report"],
    shell:
        "python -m dperm audit-table {input} --csv {output.csv} --md {output.md} --html {output.html}"
        " --png {output.png}"
        " --pdf {output.pdf} {params.enforce} {params.quick} > {log} 2>&1"


rule audit:
    """Every algorithm audited, the controls caught: results/audit/audit.{csv,md}, figures/audit/."""
    input:
        rules.audit_table.output,
