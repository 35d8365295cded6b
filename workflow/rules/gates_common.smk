# Settings, checks and input functions of the CI gates (workflow/rules/gates.smk), included by
# the Snakefile ahead of the rule files; the config's `gates` section is checked before any job by
# classwise.pipeline.gates (unknown metrics, scopes, metrics that need scores on hard predictions).
from classwise.pipeline.gates import gate_runs

GATES = config["gates"]
GATE_RUNS = gate_runs(
    GATES,
    PLAN,
    views={dataset: views_of(dataset) for dataset in DATASETS},
    k=config["metrics"]["worst_class"]["k"],
    ns=config["metrics"]["worst_class"]["n"],
    source=CONFIG_SOURCE,
)


def gate_checks():
    """The runs the gates apply to, with the paths of their metrics JSON (decisiveness: none
    for hard predictions)."""
    checks = []
    for run in GATE_RUNS:
        wildcards = {key: run[key] for key in ("dataset", "labels", "model", "shift")}
        decisiveness = (
            file_of("decisiveness_metrics", OUT, wildcards)
            if run["scored"] == "yes"
            else ""
        )
        checks.append(
            {
                **run,
                "worst_class": file_of("worst_class_metrics", OUT, wildcards),
                "decisiveness": decisiveness,
            }
        )
    return checks


def gate_metrics():
    """Every metrics JSON the gates read."""
    return [
        path
        for check in gate_checks()
        for path in (check["worst_class"], check["decisiveness"])
        if path
    ]


def every_other_output():
    """Every output of the default target besides the gates (enforce_gates waits for them)."""
    return [*requested(planned_outputs()), f"{OUT}/README.md"]


def gate_outputs():
    """gates.md and the marker that every gate passed, when the config has gates."""
    return [f"{OUT}/gates.md", f"{OUT}/gates.passed"] if GATES else []
