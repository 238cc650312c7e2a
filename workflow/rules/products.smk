# Every paper's products (its own tables and figures, declared in its plugin's PRODUCTS:
# src/dperm/report/products.py), one generated rule each, and every paper's targets. Generic: no
# paper is named here; what a rule reads, writes and shows in the report comes from the
# declaration, and its command is the one `product` verb.
PRODUCT_CODE = {
    paper: source_fingerprint(
        f"papers/{paper}", "report", "losses", "privacy", "problem", "solvers"
    )
    for paper in PAPERS
}

for _paper in PAPERS:
    for _product in paper_products(_paper):

        rule:
            name:
                product_rule_name(_paper, _product)
            input:
                **product_inputs(_paper, _product),
            output:
                **product_outputs(_paper, _product),
            log:
                f"{OUT}logs/products/{_paper}/{_product.name}.log",
            group:
                cluster_group("product", paper=_paper)
            conda:
                "../envs/dperm.yaml"
            resources:
                **cluster_resources("product"),
            params:
                paper=_paper,
                product=_product.name,
                spec=product_spec_json(_paper, _product),
                quick=quick_flag(),
                code=PRODUCT_CODE[_paper],
            shell:
                "python -m dperm product {params.paper} {params.product} --spec {params.spec:q}"
                " --cells {input.cells} --summaries {input.summaries} --tables {input.tables}"
                " --prepared {input.prepared} --provenance {input.provenance}"
                " --datasets {input.datasets} --outputs {output} {params.quick} > {log} 2>&1"

    # The paper's target (its name) and any extra target its products belong to.
    rule:
        name:
            _paper
        input:
            requested_paper_outputs(_paper),

    for _target in extra_targets(_paper):

        rule:
            name:
                _target
            input:
                requested_paper_outputs(_paper, _target),


# A paper the configuration leaves out, asked for by name: say so (not "No rule to produce").
for _paper in sorted(set(papers.names()) - set(PAPERS)):

    rule:
        name:
            _paper
        input:
            unconfigured_paper(_paper),
