# Table cells and the certified optima they are measured against.


rule optimum:
    input:
        data="resources/prepared/{dataset}/{profile}.npz",
    output:
        "results/optima/{paper}/{experiment}/{dataset}/{model}/{profile}.csv",
    params:
        spec=optimum_spec_json,
        code=CODE["optimum"],
    log:
        "logs/optimum/{paper}/{experiment}/{dataset}/{model}/{profile}.log",
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} optimum --spec {params.spec:q}"
        " --data {input.data} --out {output} > {log} 2>&1"


rule run_cell:
    input:
        unpack(cell_inputs),
    output:
        "results/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.csv",
    params:
        spec=lambda wildcards: experiments.dumps(cell_spec(wildcards)),
        optimum=lambda wildcards, input: (
            f"--optimum {input.optimum}" if hasattr(input, "optimum") else ""
        ),
        code=CODE["runs"],
    log:
        "logs/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.log",
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} run-cell --spec {params.spec:q}"
        " --data {input.data} {params.optimum} --out {output} > {log} 2>&1"
