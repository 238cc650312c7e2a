# Kang et al. (src/dperm/papers/kang/, docs/papers/kang.md): Figures 1-2 are generic epsilon
# figures (config/papers/kang.yaml); this file adds PIDP-SGD's noise-free table, the claims and
# the paper target (kang).
KANG_CODE = source_fingerprint("papers/kang", "report")
KANG_PIDP_CELLS = [
    cell for cell in experiment_cells("kang", "fig") if "/pidp-sgd-reference/" in cell
]


rule kang_noise_free:
    input:
        KANG_PIDP_CELLS,
    output:
        csv=report(
            f"{OUT}results/tables/kang/noise_free.csv",
            caption=paper_caption("kang", "noise_free"),
            category=report_category("kang"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/kang/noise_free.md",
    log:
        f"{OUT}logs/kang/noise_free.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=KANG_CODE,
    shell:
        "python -m dperm kang noise-free {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule kang_claims:
    input:
        summary("kang", "fig"),
    output:
        csv=report(
            f"{OUT}results/tables/kang/claims.csv",
            caption=paper_caption("kang", "claims"),
            category=report_category("kang"),
            subcategory="tables",
        ),
        md=f"{OUT}results/tables/kang/claims.md",
    log:
        f"{OUT}logs/kang/claims.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=KANG_CODE,
    shell:
        "python -m dperm kang claims {input} --csv {output.csv} --md {output.md} {params.quick}"
        " > {log} 2>&1"


rule kang:
    """Every output of Kang et al.: Figures 1-2, the noise-free table and the claims."""
    input:
        paper_outputs("kang"),
        [
            f"{OUT}results/tables/kang/{name}.{ext}"
            for name in ("noise_free", "claims")
            for ext in ("csv", "md")
        ],
