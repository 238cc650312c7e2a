# Raw files -> prepared arrays -> dataset table.


# On a cluster, fetching runs on the submitting host: cluster nodes often have no network, and
# reading or downloading a raw file needs none of their cores.
localrules:
    fetch_raw,


rule fetch_raw:
    input:
        # nothing to read; a dataset no source can supply is refused when the DAG is built
        lambda wildcards: require_available(f"dataset {wildcards.dataset!r}", [wildcards.dataset])
        or [],
    output:
        "resources/raw/{dataset}/fetch.json",
    log:
        "logs/fetch_raw/{dataset}.log",
    conda:
        "../envs/dperm.yaml"
    params:
        code=CODE["fetch"],
    shell:
        "python -m dperm fetch {wildcards.dataset} --out {output} > {log} 2>&1"


rule prepare:
    input:
        "resources/raw/{dataset}/fetch.json",
    output:
        npz="resources/prepared/{dataset}/{profile}.npz",
        json="resources/prepared/{dataset}/{profile}.json",
    log:
        "logs/prepare/{dataset}/{profile}.log",
    benchmark:
        "benchmarks/out/prepare/{dataset}/{profile}.tsv"
    priority: chain_priority("data")
    group:
        cluster_group("data")
    conda:
        "../envs/dperm.yaml"
    threads: 1
    resources:
        **cluster_resources("data"),
    params:
        options=lambda wildcards: json.dumps(
            profile_options(wildcards.dataset, wildcards.profile), sort_keys=True
        ),
        code=CODE["prepare"],
    shell:
        "python -m dperm --threads {threads} prepare {wildcards.dataset} --fetched {input}"
        " --profile {wildcards.profile} --options {params.options:q} --out {output.npz} > {log} 2>&1"


rule dataset_table:
    input:
        lambda wildcards: [
            f"resources/prepared/{k}/default.json" for k in configured_available_datasets()
        ],
    output:
        csv=f"{OUT}results/tables/datasets.csv",
        md=f"{OUT}results/tables/datasets.md",
        html=report(
            f"{OUT}results/tables/datasets.html",
            caption="../report/datasets.rst",
            category=DATASETS_CATEGORY,
        ),
    log:
        f"{OUT}logs/dataset_table.log",
    benchmark:
        f"{OUT}benchmarks/out/dataset_table.tsv"
    group:
        cluster_group("product")
    conda:
        "../envs/dperm.yaml"
    resources:
        **cluster_resources("product"),
    params:
        unavailable=json.dumps({k: UNAVAILABLE[k] for k in config["datasets"] if k in UNAVAILABLE}),
        code=CODE["prepare"] + source_fingerprint("papers"),
    shell:
        "python -m dperm dataset-table {input} --unavailable {params.unavailable:q}"
        " --csv {output.csv} --md {output.md} --html {output.html} > {log} 2>&1"


rule prepare_all:
    """Every configured dataset, including those the mirror lacks (which then fail alone with
    the fetch error; add --keep-going to build the rest)."""
    input:
        [prepared(k) for k in config["datasets"]],
