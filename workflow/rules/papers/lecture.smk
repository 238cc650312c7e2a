# Wang's lecture notes, Lecture 15 (src/dperm/papers/lecture/, docs/papers/lecture.md): the
# accounting lab (computed here, not a grid of fits), SGD-MA under three accountants, the notes'
# rates with fitted slopes, the claims table, and the paper target.
LECTURE = PAPERS["lecture"]
LECTURE_CODE = source_fingerprint("papers/lecture", "report", "privacy")
LECTURE_TABLES = f"{OUT}results/tables/lecture"
LECTURE_FIGURES = f"{OUT}figures/lecture"


rule lecture_lab:
    output:
        curves=f"{LECTURE_TABLES}/lab_curves.csv",
        csv=report(
            f"{LECTURE_TABLES}/lab.csv",
            caption=paper_caption("lecture", "lab"),
            category=report_category("lecture"),
            subcategory="accounting lab",
        ),
        md=f"{LECTURE_TABLES}/lab.md",
        sigmas_csv=report(
            f"{LECTURE_TABLES}/sigmas.csv",
            caption=paper_caption("lecture", "sigmas"),
            category=report_category("lecture"),
            subcategory="accounting lab",
        ),
        sigmas_md=f"{LECTURE_TABLES}/sigmas.md",
        png=report(
            f"{LECTURE_FIGURES}/lab.png",
            caption=paper_caption("lecture", "lab"),
            category=report_category("lecture"),
            subcategory="accounting lab",
        ),
        pdf=f"{LECTURE_FIGURES}/lab.pdf",
    log:
        f"{OUT}logs/lecture/lab.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        spec=experiments.dumps(LECTURE["analyses"]["lab"]),
        quick=quick_flag(),
        code=LECTURE_CODE,
    shell:
        "python -m dperm lecture lab --spec {params.spec:q} --curves {output.curves}"
        " --csv {output.csv} --md {output.md} --sigmas-csv {output.sigmas_csv}"
        " --sigmas-md {output.sigmas_md} --png {output.png} --pdf {output.pdf} {params.quick}"
        " > {log} 2>&1"


rule lecture_sgdma:
    input:
        experiment_cells("lecture", LECTURE["analyses"]["sgdma"]["experiment"]),
    output:
        csv=report(
            f"{LECTURE_TABLES}/sgdma.csv",
            caption=paper_caption("lecture", "sgdma"),
            category=report_category("lecture"),
            subcategory="SGD-MA accountants",
        ),
        md=f"{LECTURE_TABLES}/sgdma.md",
        png=report(
            f"{LECTURE_FIGURES}/sgdma.png",
            caption=paper_caption("lecture", "sgdma"),
            category=report_category("lecture"),
            subcategory="SGD-MA accountants",
        ),
        pdf=f"{LECTURE_FIGURES}/sgdma.pdf",
    log:
        f"{OUT}logs/lecture/sgdma.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=LECTURE_CODE,
    shell:
        "python -m dperm lecture sgdma {input} --csv {output.csv} --md {output.md}"
        " --png {output.png} --pdf {output.pdf} {params.quick} > {log} 2>&1"


rule lecture_rates:
    input:
        convex=summary("lecture", LECTURE["analyses"]["rates"]["experiments"]["convex"]),
        strong=summary("lecture", LECTURE["analyses"]["rates"]["experiments"]["strong"]),
    output:
        csv=report(
            f"{LECTURE_TABLES}/rates.csv",
            caption=paper_caption("lecture", "rates"),
            category=report_category("lecture"),
            subcategory="rates",
        ),
        md=f"{LECTURE_TABLES}/rates.md",
        slopes_csv=report(
            f"{LECTURE_TABLES}/rates_slopes.csv",
            caption=paper_caption("lecture", "rates"),
            category=report_category("lecture"),
            subcategory="rates",
        ),
        slopes_md=f"{LECTURE_TABLES}/rates_slopes.md",
        png=report(
            f"{LECTURE_FIGURES}/rates.png",
            caption=paper_caption("lecture", "rates"),
            category=report_category("lecture"),
            subcategory="rates",
        ),
        pdf=f"{LECTURE_FIGURES}/rates.pdf",
    log:
        f"{OUT}logs/lecture/rates.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=LECTURE_CODE,
    shell:
        "python -m dperm lecture rates --convex {input.convex} --strong {input.strong}"
        " --csv {output.csv} --md {output.md} --slopes-csv {output.slopes_csv}"
        " --slopes-md {output.slopes_md} --png {output.png} --pdf {output.pdf} {params.quick}"
        " > {log} 2>&1"


rule lecture_claims:
    input:
        lab=f"{LECTURE_TABLES}/lab.csv",
        sigmas=f"{LECTURE_TABLES}/sigmas.csv",
        accuracy=summary("lecture", "accuracy"),
        sgdma=f"{LECTURE_TABLES}/sgdma.csv",
        slopes=f"{LECTURE_TABLES}/rates_slopes.csv",
    output:
        csv=report(
            f"{LECTURE_TABLES}/claims.csv",
            caption=paper_caption("lecture", "claims"),
            category=report_category("lecture"),
            subcategory="claims",
        ),
        md=f"{LECTURE_TABLES}/claims.md",
    log:
        f"{OUT}logs/lecture/claims.log",
    conda:
        "../../envs/dperm.yaml"
    params:
        quick=quick_flag(),
        code=LECTURE_CODE,
    shell:
        "python -m dperm lecture claims --lab {input.lab} --sigmas {input.sigmas}"
        " --accuracy {input.accuracy} --sgdma {input.sgdma} --slopes {input.slopes}"
        " --csv {output.csv} --md {output.md} {params.quick} > {log} 2>&1"


rule lecture:
    """Every output of Wang's lecture notes (see config/papers/lecture.yaml)."""
    input:
        paper_outputs("lecture"),
        [
            f"{LECTURE_TABLES}/{name}.{ext}"
            for name in ("lab", "sigmas", "sgdma", "rates", "rates_slopes", "claims")
            for ext in ("csv", "md")
        ],
        [
            f"{LECTURE_FIGURES}/{name}.{ext}"
            for name in ("lab", "sgdma", "rates")
            for ext in ("png", "pdf")
        ],
