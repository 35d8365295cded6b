"""The analyses of ``analyses:`` that evaluate models (workflow/rules/analyses.smk), one entry
each: the one list that the config checks, the plan (:func:`classwise.pipeline.plan.resolve_analyses`),
the scopes of their outputs (:func:`classwise.pipeline.plan.analysis_scopes`) and the outputs'
conditions (:data:`classwise.outputs.record.CONDITIONS`) read. A new analysis is an entry here,
its block in workflow/schemas/analyses.schema.yaml, its records, step, script and rule
(docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Analysis:
    """An analysis as the plan schedules it: its config section and output condition ``name``
    (``analyses.<name>``, the ``when`` of its records), the key of the section naming the shift
    it reads, and what it needs. It runs on each label view of ``analyses.label_views`` that holds
    its shift and gives one true class per image, for each model with scores on what it reads."""

    name: str
    shift_key: str
    #: When its outputs are planned: the condition's description (:data:`~classwise.outputs.record.CONDITIONS`).
    condition: str
    #: It compares its shift with every other shift of the view that scores every class (the
    #: reference tests): it needs one, and scores on all of them.
    reads_every_shift: bool = False
    #: It splits the samples by image features (the subset tests): a labels-only dataset skips
    #: it, and the features are one job per dataset before its views'.
    needs_images: bool = False


#: The analyses in plan order (the order results/README.md lists their outputs in).
ANALYSES = (
    Analysis("subset_tests", "shift", "the subset tests run", needs_images=True),
    Analysis("reference_tests", "reference", "the reference tests run", reads_every_shift=True),
    Analysis("extrapolation", "shift", "the extrapolation runs"),
)
