# Jobs (the cells that share work, run in one process), the cell files cut from them, the
# certified optima they are measured against and the non-private tuning they may use.


checkpoint tune:
    """Non-private hyper-parameter selection for one (model, tuning profile) of a dataset (see
    dperm.tuning); cells that use its choices are marked tuning: non-private. A fit waits for
    its own part only (tuning_choices)."""
    input:
        tuning_data,
    output:
        json=f"{OUT}results/tuning/{{paper}}/{{dataset}}/{{model}}/{{profile}}.json",
        usage=f"{OUT}results/tuning/{{paper}}/{{dataset}}/{{model}}/{{profile}}.usage.json",
        csv=f"{OUT}results/tuning/{{paper}}/{{dataset}}/{{model}}/{{profile}}.csv",
    log:
        f"{OUT}logs/tune/{{paper}}/{{dataset}}/{{model}}/{{profile}}.log",
    benchmark:
        f"{OUT}benchmarks/out/tune/{{paper}}/{{dataset}}/{{model}}/{{profile}}.tsv"
    priority: chain_priority("tuning")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("tuning"),
    params:
        spec=tuning_spec_json,
        seed=config["seed"],
        code=tuning_code,
    shell:
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} tune --spec {params.spec:q}"
        " --seed {params.seed} --part {wildcards.model}/{wildcards.profile}"
        " --data {input} --json {output.json} --csv {output.csv}"


# Joining a dataset's tuning parts reads a few small files: on a cluster it runs on the submitting
# host as soon as the parts exist (in the report group it would wait for the paper's last fit and
# then run in line with the summaries, on the critical path).
localrules:
    tuning_table,


rule tuning_table:
    """One dataset's tuning choices and grid, joined from its parts: the page the report shows."""
    input:
        tuning_part_files,
    output:
        json=f"{OUT}results/tuning/{{paper}}/{{dataset}}.json",
        csv=f"{OUT}results/tuning/{{paper}}/{{dataset}}.csv",
        html=report(
            f"{OUT}results/tuning/{{paper}}/{{dataset}}.html",
            caption="../report/tuning.rst",
            category=lambda wildcards: report_category(wildcards.paper),
            subcategory="tuning (non-private)",
        ),
    log:
        f"{OUT}logs/tuning_table/{{paper}}/{{dataset}}.log",
    benchmark:
        f"{OUT}benchmarks/out/tuning_table/{{paper}}/{{dataset}}.tsv"
    conda:
        "../envs/dperm.yaml"
    shell:
        "python -m dperm --log {log} tuning-table --parts {input} --json {output.json} --csv {output.csv}"
        " --html {output.html}"


rule optimum:
    input:
        data="resources/prepared/{dataset}/{profile}.npz",
    output:
        csv=f"{OUT}results/optima/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}.csv",
        usage=f"{OUT}results/optima/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}.usage.json",
    log:
        f"{OUT}logs/optimum/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}.log",
    benchmark:
        f"{OUT}benchmarks/out/optimum/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}.tsv"
    priority: chain_priority("optimum")
    group:
        cluster_group("optimum")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("optimum"),
    params:
        spec=optimum_spec_json,
        code=CODE["optimum"],
        part=optimum_part,
    shell:
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} optimum"
        " --spec {params.spec:q} --data {input.data} {params.part} --out {output.csv}"


# An optimum its experiment splits (`optimum_parts`, a long multi-start solve on the critical path)
# runs as parts, each the same command on every n-th split; the jobs read the parts together.
use rule optimum as optimum_part with:
    output:
        csv=f"{OUT}results/optima/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}/part{{part}}.csv",
        usage=f"{OUT}results/optima/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}/part{{part}}.usage.json",
    log:
        f"{OUT}logs/optimum/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}/part{{part}}.log",
    benchmark:
        f"{OUT}benchmarks/out/optimum/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}/l2-{{l2}}/part{{part}}.tsv"


rule starts:
    """theta~, the non-private start of PIDP-SGD and its control, once per training split for
    every job of an (experiment, dataset, model) that starts from it (dperm.optimum.compute_starts).
    """
    input:
        data="resources/prepared/{dataset}/{profile}.npz",
    output:
        npz=f"{OUT}results/starts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}.npz",
        usage=f"{OUT}results/starts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}.usage.json",
    log:
        f"{OUT}logs/starts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}.log",
    benchmark:
        f"{OUT}benchmarks/out/starts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{profile}}.tsv"
    priority: chain_priority("optimum")
    group:
        cluster_group("optimum")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("optimum"),
    params:
        spec=starts_spec,
        code=CODE["starts"],
    shell:
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} starts"
        " --spec {params.spec:q} --data {input.data} --out {output.npz}"


rule run_job:
    """The cells of one (experiment, dataset, model, algorithm) in one process: every target ε
    of a row (DP-AGD fits them together), every step count of a path (one run, released along
    the way), or a lone non-private cell (dperm.protocol.runner.run_job)."""
    input:
        unpack(job_inputs),
    output:
        csv=f"{OUT}results/jobs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}.csv",
        # the job's own CPU time and peak memory (getrusage), for the scheduling analyses
        usage=f"{OUT}results/jobs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}.usage.json",
    log:
        f"{OUT}logs/jobs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}.log",
    benchmark:
        f"{OUT}benchmarks/out/jobs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}.tsv"
    priority: job_priority
    group:
        cluster_group("fit")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("fit"),
    params:
        specs=job_specs,
        data=data_param,
        tuning=option("tuning"),
        optimum=option("optimum"),
        starts=option("starts"),
        extra=extra_data,
        code=job_code,
    shell:
        # the log file gets everything; the terminal, the job's progress (fits done, time left)
        "python -m dperm --threads {threads} --log {log} --usage {output.usage} run-job --spec {params.specs:q}"
        " --data {params.data} {params.tuning} {params.optimum} {params.starts} {params.extra} --out {output.csv}"


# A job its experiment splits (`parts`, for the long jobs on the critical path) runs as parts, each
# the same command on a share of the job's privacy settings; its cells are cut from them.
use rule run_job as run_part with:
    output:
        csv=f"{OUT}results/parts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/part{{part}}.csv",
        usage=f"{OUT}results/parts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/part{{part}}.usage.json",
    log:
        f"{OUT}logs/parts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/part{{part}}.log",
    benchmark:
        f"{OUT}benchmarks/out/parts/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/part{{part}}.tsv"


# Cutting a cell reads one small file: never worth a cluster job of its own. On a cluster it runs
# in its job's group (cluster_group("cut")), right after the fits, on the same node.
rule cut_cell:
    """One privacy setting's records, cut from its job's file with their text unchanged."""
    input:
        cell_job,
    output:
        f"{OUT}results/runs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/eps{{epsilon}}.csv",
    log:
        f"{OUT}logs/runs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/eps{{epsilon}}.log",
    benchmark:
        f"{OUT}benchmarks/out/runs/{{paper}}/{{experiment}}/{{dataset}}/{{model}}/{{algorithm}}/eps{{epsilon}}.tsv"
    group:
        cluster_group("cut")
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("cut"),
    shell:
        "python -m dperm cut-cell --setting {wildcards.epsilon} {input} {output} > {log} 2>&1"
