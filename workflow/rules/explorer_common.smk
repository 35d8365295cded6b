# What the explorer reads (workflow/rules/explorer.smk): per dataset and label view, the metric
# outputs of every model and shift and, on the original labels, the class-wise robustness step's
# shift summary (classwise.pipeline.explorer).
from classwise.pipeline.explorer import explorer_inputs, explorer_views

EXPLORER_VIEWS = explorer_views(PLAN, ROBUSTNESS_RUNS, out=OUT)
