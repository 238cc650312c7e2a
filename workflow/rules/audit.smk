# The black-box privacy audit of every registered private algorithm and of mutants built to be
# caught (dperm.audit). Target: snakemake --cores 2 audit


rule audit_subject:
    output:
        f"{OUT}results/audit/subjects/{{subject}}.csv",
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
        mutation_csv=report(
            f"{OUT}results/audit/mutation.csv",
            caption="../report/audit_mutation.rst",
            category=AUDIT_CATEGORY,
        ),
        mutation_md=f"{OUT}results/audit/mutation.md",
        summary_csv=f"{OUT}results/audit/summary.csv",
        summary_md=f"{OUT}results/audit/summary.md",
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
        "python -m dperm audit-table {input} --csv {output.csv} --md {output.md} --png {output.png}"
        " --pdf {output.pdf} --mutation-csv {output.mutation_csv} --mutation-md {output.mutation_md}"
        " --summary-csv {output.summary_csv} --summary-md {output.summary_md}"
        " {params.enforce} {params.quick} > {log} 2>&1"


rule audit_one_run:
    output:
        csv=report(
            f"{OUT}results/audit/one_run.csv",
            caption="../report/audit_one_run.rst",
            category=AUDIT_CATEGORY,
        ),
        md=f"{OUT}results/audit/one_run.md",
        calibration_csv=f"{OUT}results/audit/one_run_calibration.csv",
        calibration_md=f"{OUT}results/audit/one_run_calibration.md",
    log:
        f"{OUT}logs/audit/one_run.log",
    benchmark:
        f"{OUT}benchmarks/out/audit/one_run.tsv"
    conda:
        "../envs/dperm.yaml"
    threads: 1
    params:
        seed=config["audit"]["seed"],
        scale=config["audit"]["scale"],
        quick=quick_flag(),
        code=audit_one_run_code,
    shell:
        "python -m dperm --threads {threads} audit-one-run --seed {params.seed} --scale {params.scale}"
        " --csv {output.csv} --md {output.md} --calibration-csv {output.calibration_csv}"
        " --calibration-md {output.calibration_md} {params.quick} > {log} 2>&1"


rule audit:
    """Every algorithm audited, its mutants and the controls: results/audit/{audit,mutation,summary,one_run}.*,
    figures/audit/."""
    input:
        rules.audit_table.output,
        rules.audit_one_run.output,
