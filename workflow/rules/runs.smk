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
        data=data_param,
        optimum=optimum_option,
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
        data=data_param,
        optimum=optimum_option,
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


rule run_row:
    """Every numeric ε of one (experiment, dataset, model, algorithm) in one process
    (dperm.protocol.run_cells): one start-up, one load of the data and one cut of each fold for
    the row instead of one per ε. Each cell's fits are those it has alone (DP-AGD runs the ε's
    chains together, each from its own seed and budget)."""
    input:
        unpack(row_inputs),
    output:
        "results/rows/{paper}/{experiment}/{dataset}/{model}/{algorithm}.csv",
    params:
        spec=row_spec_param,
        data=data_param,
        optimum=optimum_option,
        code=row_code,
    log:
        "logs/rows/{paper}/{experiment}/{dataset}/{model}/{algorithm}.log",
    benchmark:
        "benchmarks/out/rows/{paper}/{experiment}/{dataset}/{model}/{algorithm}.tsv"
    threads: 1
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --threads {threads} run-cell --spec {params.spec:q}"
        " --data {params.data} {params.optimum} --out {output} > {log} 2>&1"


# A cell with a target ε is cut from its row, a T<steps> cell from its path; run_cell runs the
# rest (inf: the non-private algorithms).
ruleorder: path_cell > row_cell > run_cell


# Cutting a cell reads one small file: never worth a cluster job.
localrules:
    path_cell,
    row_cell,


rule row_cell:
    """A cell with a target ε: its records, cut from its row's file."""
    input:
        "results/rows/{paper}/{experiment}/{dataset}/{model}/{algorithm}.csv",
    output:
        "results/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.csv",
    wildcard_constraints:
        epsilon=NUMERIC_EPSILON,
    log:
        "logs/runs/{paper}/{experiment}/{dataset}/{model}/{algorithm}/eps{epsilon}.log",
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm cut-cell --setting {wildcards.epsilon} {input} {output} > {log} 2>&1"


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
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm cut-cell --setting {wildcards.epsilon} {input} {output} > {log} 2>&1"
