# classwise: evaluate image classifiers on their worst classes.
#
# Outputs (below config["output_dir"], default results/):
#   models/{model}.pt                                 trained demo checkpoints
#   logits/{dataset}/{model}/{shift}.npz (+ .json)    cached logits, one inference per triple
#   metrics/{dataset}/{labels}/{model}/{shift}/       metric JSON + per-class CSV
#   tables/{dataset}/{labels}/{shift}/                paper-style tables (md, csv, tex)
#   explorer.html                                     every class, model and shift in one page
#   metrics.parquet (+ metrics.csv)                   every number of the run, one row each
#   gates.md                                          the config's gates: pass / FAIL per run
#   logs/, benchmarks/                                one log per job, timings of heavy rules
from snakemake.utils import min_version

min_version("9.0")


# The embedded demo is the default config, found beside this file (not beside the main
# Snakefile, which may be workflow/Snakefile or a workflow that includes this one), so the
# workflow runs from any directory (snakemake -s <repo>/Snakefile --directory <dir>). A config
# given with --configfile replaces it rather than merging into it (Snakemake merges by default,
# which would mix the demo's models into a paper config).
DEMO_CONFIG = workflow.current_basedir.join("config/config.yaml").get_path_or_uri(
    secret_free=True
)


if not workflow.overwrite_configfiles:

    configfile: DEMO_CONFIG


# common.smk checks the config and builds the plan once (PLAN: which models, shifts, label views,
# comparisons, analyses and robustness analyses run where; classwise.pipeline.plan.build_plan);
# every other file only reads it. Each *_common.smk defines what its rules read of the plan and
# comes before them; outputs_common.smk plans every output, which the shift batches
# (batches_common.smk) group; batches.smk comes after the per-shift rules it batches (it reads
# them as Snakemake holds them). Those are the orders that matter.
include: "workflow/rules/common.smk"
include: "workflow/rules/analyses_common.smk"
include: "workflow/rules/robustness_common.smk"
include: "workflow/rules/explorer_common.smk"
include: "workflow/rules/gates_common.smk"
include: "workflow/rules/outputs_common.smk"
include: "workflow/rules/batches_common.smk"
include: "workflow/rules/resources.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/analyses.smk"
include: "workflow/rules/robustness.smk"
include: "workflow/rules/explorer.smk"
include: "workflow/rules/numbers.smk"
include: "workflow/rules/gates.smk"
include: "workflow/rules/batches.smk"


rule all:
    default_target: True
    input:
        requested(planned_outputs()),
        f"{OUT}/README.md",
        gate_outputs(),
