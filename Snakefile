# dperm: reproduce and extend five works on differentially private ERM.
# Entry point only: configuration, includes and the default target. See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/runs.smk"
include: "workflow/rules/reports.smk"
include: "workflow/rules/lee2018.smk"
include: "workflow/rules/zhang2017_common.smk"
include: "workflow/rules/zhang2017.smk"


rule all:
    input:
        default_targets(),
    default_target: True
