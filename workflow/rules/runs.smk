# Table cells and the certified optima they are measured against.


checkpoint tune:
    """Non-private hyper-parameter selection for one dataset (see dperm.tuning); cells that use
    its choices are marked tuning: non-private."""
    input:
        tuning_data,
    output:
        json="results/tuning/{paper}/{dataset}.json",
        csv=report(
            "results/tuning/{paper}/{dataset}.csv",
            caption="../report/tuning.rst",
            category="{paper}",
            subcategory="tuning (non-private)",
        ),
    params:
        paper=lambda wildcards: paper_file(wildcards.paper),
        grid=lambda wildcards: experiments.dumps(PAPERS[wildcards.paper].get("tuning", {})),
        seed=config["seed"],
        code=tuning_code,
    log:
        "logs/tune/{paper}/{dataset}.log",
    benchmark:
        "benchmarks/out/tune/{paper}/{dataset}.tsv"
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} tune --paper {params.paper} --seed {params.seed}"
        " --data {input} --json {output.json} --csv {output.csv} > {log} 2>&1"


rule optimum:
    input:
        data="resources/prepared/{dataset}/{profile}.npz",
    output:
        "results/optima/{paper}/{experiment}/{dataset}/{model}/{profile}/l2-{l2}.csv",
    params:
        spec=optimum_spec_json,
        code=CODE["optimum"],
    log:
        "logs/optimum/{paper}/{experiment}/{dataset}/{model}/{profile}/l2-{l2}.log",
    benchmark:
        "benchmarks/out/optimum/{paper}/{experiment}/{dataset}/{model}/{profile}/l2-{l2}.tsv"
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
        spec=cell_spec_param,
        # While the tune checkpoint is pending (dry runs), the inputs are only the checkpoint's
        # output; the command is formatted anyway, so every input is read defensively.
        data=lambda wildcards, input: input.data if hasattr(input, "data") else "<pending>",
        optimum=lambda wildcards, input: (
            f"--optimum {input.optimum}" if hasattr(input, "optimum") else ""
        ),
        code=cell_code,
    log:
        "logs/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.log",
    benchmark:
        "benchmarks/out/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.tsv"
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} run-cell --spec {params.spec:q}"
        " --data {params.data} {params.optimum} --out {output} > {log} 2>&1"


rule run_path:
    """Every step count of a T<steps> algorithm in one run: the longest cell's fits, releasing
    their iterates at the shorter step counts too (dperm.protocol.run_cell, spec "path")."""
    input:
        unpack(path_inputs),
    output:
        "results/paths/{paper}/{experiment}/{dataset}/{model}/{algorithm}.csv",
    params:
        spec=path_spec_param,
        data=lambda wildcards, input: input.data if hasattr(input, "data") else "<pending>",
        optimum=lambda wildcards, input: (
            f"--optimum {input.optimum}" if hasattr(input, "optimum") else ""
        ),
        code=path_code,
    wildcard_constraints:
        algorithm=_alternatives(PATH_ALGORITHMS) or "(?!)",
    log:
        "logs/paths/{paper}/{experiment}/{dataset}/{model}/{algorithm}.log",
    benchmark:
        "benchmarks/out/paths/{paper}/{experiment}/{dataset}/{model}/{algorithm}.tsv"
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} run-cell --spec {params.spec:q}"
        " --data {params.data} {params.optimum} --out {output} > {log} 2>&1"


ruleorder: path_cell > run_cell


rule path_cell:
    """A T<steps> cell: its records, cut from its path's file."""
    input:
        "results/paths/{paper}/{experiment}/{dataset}/{model}/{algorithm}.csv",
    output:
        "results/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.csv",
    wildcard_constraints:
        algorithm=_alternatives(PATH_ALGORITHMS) or "(?!)",
        epsilon="T[0-9]+",
    log:
        "logs/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.log",
    run:
        extract_path_cell(input[0], output[0], wildcards.epsilon, log[0])
