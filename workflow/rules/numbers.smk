# Every number of the run in one table, read from the output files of the other rules (never
# computed again), each number with one value (classwise.outputs.numbers):
#   results/metrics.parquet   one row per number: dataset, label view, model, shift, metric,
#                             class, value, interval, n, pairing, ... (docs/pipeline.md)
#   results/metrics.csv       its rows of whole-set numbers (no class)
from classwise.outputs.numbers import number_files


rule collect_numbers:
    input:
        lambda wildcards: number_files(planned_outputs(), OUT),
    output:
        **outputs_of_rule("collect_numbers"),
    log:
        f"{OUT}/logs/collect_numbers.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        # shift -> [family, severity or None]: the table's family and severity columns
        shift_families={
            name: [spec.family, (spec.severity_step or (None, None))[1]]
            for name, spec in SHIFTS.items()
        },
    script:
        "../../scripts/collect_numbers.py"
