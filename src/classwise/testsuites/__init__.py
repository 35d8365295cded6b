"""Image-classification test suites (the model-testing catalogue).

* :mod:`~classwise.testsuites.features` - per-sample image features and user metadata;
* :mod:`~classwise.testsuites.classification` - the per-set metrics, following
  scikit-learn's definitions (the document's worked examples are mutually inconsistent);
* :mod:`~classwise.testsuites.subsets` - subset performance tests (permutation test,
  Holm / Benjamini-Hochberg correction);
* :mod:`~classwise.testsuites.reference` - reference-vs-evaluation tests (average
  confidence, ATC, calibration-curve MSE, ...) with pass / warn / fail thresholds.
"""

from __future__ import annotations

from classwise.testsuites.classification import (
    HIGHER_IS_BETTER,
    SUBSET_METRICS,
    SubsetEvaluator,
    classification_metrics,
    positive_prediction_rates,
    to_probabilities,
)
from classwise.testsuites.features import image_features, load_metadata
from classwise.testsuites.reference import (
    DEFAULT_THRESHOLDS,
    REFERENCE_METRICS,
    ReferenceTestOptions,
    atc_predicted_accuracy,
    atc_threshold,
    calibration_curve,
    calibration_mse,
    compare_to_reference,
    reference_report,
    summarise_reports,
)
from classwise.testsuites.subsets import (
    SubsetSplit,
    SubsetTestOptions,
    adjust_pvalues,
    benjamini_hochberg,
    holm,
    split_feature,
    subset_performance_tests,
    worst_subsets,
)

__all__ = [
    "DEFAULT_THRESHOLDS",
    "HIGHER_IS_BETTER",
    "REFERENCE_METRICS",
    "SUBSET_METRICS",
    "ReferenceTestOptions",
    "SubsetEvaluator",
    "SubsetSplit",
    "SubsetTestOptions",
    "adjust_pvalues",
    "atc_predicted_accuracy",
    "atc_threshold",
    "benjamini_hochberg",
    "calibration_curve",
    "calibration_mse",
    "classification_metrics",
    "compare_to_reference",
    "holm",
    "image_features",
    "load_metadata",
    "positive_prediction_rates",
    "reference_report",
    "split_feature",
    "subset_performance_tests",
    "summarise_reports",
    "to_probabilities",
    "worst_subsets",
]
