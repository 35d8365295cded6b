"""Robustness analyses over cached logits: targeted-attack success and transformation tests.

* :mod:`classwise.robustness.classwise` -- class-wise accuracy and CFPS per shift and model,
  the confusion matrix averaged over models and the models' error similarity (Figures 2-4, 7).
* :mod:`classwise.robustness.targeted` -- success rate of targeted PGD per target class
  (Medi et al., 2024, Figure 5), from the logits of ``pgd_targeted_<t>`` shifts.
* :mod:`classwise.robustness.transformation_tests` -- accuracy, macro F1 and prediction flip
  rate of every corruption against clean, marked pass / warn / fail
  (the model-testing catalogue, "Transformations").
"""

from classwise.robustness.classwise import (
    classwise_table,
    classwise_values,
    confusion_of,
    mean_confusion,
    similarity_table,
)
from classwise.robustness.targeted import (
    TARGETED_PREFIX,
    target_of_shift,
    targeted_shift_name,
    targeted_success_rates,
    targeted_success_table,
)
from classwise.robustness.transformation_tests import (
    STATUSES,
    Thresholds,
    macro_f1,
    prediction_flip_rate,
    transformation_test_table,
)

__all__ = [
    "STATUSES",
    "TARGETED_PREFIX",
    "Thresholds",
    "classwise_table",
    "classwise_values",
    "confusion_of",
    "macro_f1",
    "mean_confusion",
    "prediction_flip_rate",
    "similarity_table",
    "target_of_shift",
    "targeted_shift_name",
    "targeted_success_rates",
    "targeted_success_table",
    "transformation_test_table",
]
