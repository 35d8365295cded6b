# CI gates (the config's `gates:`): bounds on the metrics of every (dataset, label view, model,
# shift) a gate applies to (workflow/rules/gates_common.smk, classwise.pipeline.gates).
#   results/gates.md, gates.json   every check (pass / FAIL with the value), by check_gates
#   results/gates.passed           written by enforce_gates when every gate passed; when one
#                                  failed, enforce_gates fails the run, after every other output
#                                  (it depends on all of them), so a CI job gets a non-zero exit
#                                  status with every table, figure and gates.md written


localrules:
    check_gates,
    enforce_gates,


rule check_gates:
    input:
        metrics=gate_metrics(),
    output:
        **outputs_of_rule("check_gates"),
    log:
        f"{OUT}/logs/check_gates.log",
    conda:
        "../../envs/metrics.yaml"
    params:
        gates=canonical(GATES),
        runs=gate_checks(),
    script:
        "../../scripts/check_gates.py"


rule enforce_gates:
    input:
        summary=f"{OUT}/gates.json",
        report=f"{OUT}/gates.md",
        # every other output first, so that a failed gate stops nothing else
        outputs=every_other_output(),
    output:
        passed=f"{OUT}/gates.passed",
    log:
        f"{OUT}/logs/enforce_gates.log",
    conda:
        "../../envs/metrics.yaml"
    script:
        "../../scripts/enforce_gates.py"
