# Lee & Kifer 2018 (src/dperm/papers/lee2018/, docs/papers/lee2018.md): the tables that are not
# grids of cells, the claims check, the price of private tuning, and the paper target.
from dperm.papers.lee2018 import selection as lee2018_selection
from dperm.papers.lee2018.private_tuning import table_spec as private_tuning_spec

LEE = PAPERS["lee2018"]
LEE_PRIVATE_TUNING = private_tuning_spec(LEE)


rule lee2018_table1:
    input:
        data=prepared(LEE["analyses"]["table1"]["dataset"]),
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/table1.csv",
            caption=paper_caption("lee2018", "table1"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/table1.md",
    log:
        f"{OUT}logs/lee2018/table1.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=experiments.dumps(LEE["analyses"]["table1"]),
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report", "losses"),
    shell:
        "python -m dperm lee2018 table1 --spec {params.spec:q} --data {input.data}"
        " --csv {output.csv} --md {output.md} {params.quick} > {log} 2>&1"


rule lee2018_table2:
    input:
        f"{OUT}results/tables/datasets.csv",
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/table2.csv",
            caption=paper_caption("lee2018", "table2"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/table2.md",
    log:
        f"{OUT}logs/lee2018/table2.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report"),
    shell:
        "python -m dperm lee2018 table2 {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule lee2018_claims:
    input:
        summary("lee2018", "fig2"),
        summary("lee2018", "fig3"),
        summary("lee2018", "reference"),
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/claims.csv",
            caption=paper_caption("lee2018", "claims"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/claims.md",
    log:
        f"{OUT}logs/lee2018/claims.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report"),
    shell:
        "python -m dperm lee2018 claims {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


# Only where the config declares the public-bounds figure: its pairs say which curves to compare.
LEE_PUBLIC = LEE["figures"].get("public-bounds")
LEE_TABLES = (
    ("table1", "table2", "claims", "selection-gap")
    + (("public-bounds",) if LEE_PUBLIC else ())
    + (("private-tuning",) if LEE_PRIVATE_TUNING["pairs"] else ())
)


rule lee2018_public_bounds:
    input:
        public=summary("lee2018", LEE_PUBLIC["experiment"] if LEE_PUBLIC else "public-bounds"),
        data=summary("lee2018", "fig2"),
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/public-bounds.csv",
            caption=paper_caption("lee2018", "public_bounds"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/public-bounds.md",
    log:
        f"{OUT}logs/lee2018/public-bounds.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        pairs=json.dumps((LEE_PUBLIC or {}).get("pairs", {}), sort_keys=True),
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report"),
    shell:
        "python -m dperm lee2018 public-bounds {input.public} {input.data} --pairs {params.pairs:q}"
        " --csv {output.csv} --md {output.md} {params.quick} > {log} 2>&1"


rule lee2018_selection_gap:
    input:
        [
            f"{OUT}{cell.path}"
            for cell in lee2018_selection.gap_cells(LEE)
            if dataset_available(cell.dataset)
        ],
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/selection-gap.csv",
            caption=paper_caption("lee2018", "selection-gap"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/selection-gap.md",
    log:
        f"{OUT}logs/lee2018/selection-gap.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report"),
    shell:
        "python -m dperm lee2018 selection-gap {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule lee2018_private_tuning:
    input:
        reference=summary("lee2018", LEE_PRIVATE_TUNING["reference"]),
        end_to_end=summary("lee2018", LEE_PRIVATE_TUNING["experiment"]),
        records=experiment_cells("lee2018", LEE_PRIVATE_TUNING["experiment"]),
    output:
        csv=report(
            f"{OUT}results/tables/lee2018/private-tuning.csv",
            caption=paper_caption("lee2018", "private-tuning"),
            category=report_category("lee2018"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/lee2018/private-tuning.md",
    log:
        f"{OUT}logs/lee2018/private-tuning.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=experiments.dumps(LEE_PRIVATE_TUNING),
        quick=quick_flag(),
        code=source_fingerprint("papers/lee2018", "report"),
    shell:
        "python -m dperm lee2018 private-tuning --spec {params.spec:q} --reference {input.reference}"
        " --end-to-end {input.end_to_end} {input.records} --csv {output.csv} --md {output.md}"
        " {params.quick} > {log} 2>&1"


rule lee2018:
    """Every table and figure of Lee & Kifer 2018 (see config/papers/lee2018.yaml)."""
    input:
        paper_outputs("lee2018"),
        [
            f"{OUT}results/tables/lee2018/{name}.{ext}"
            for name in LEE_TABLES
            for ext in ("csv", "md")
        ],
