"""The results of :func:`classwise.extrapolation.simulation.evaluate_methods` as tables: every
curve in long form (:func:`curves_frame`), and the RMSE summary per method with the comparison
to CleaneX of Figure 3 E (:func:`rmse_table`), full precision (display rounding is the caller's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from classwise.extrapolation.simulation import Evaluation, reference_comparison

__all__ = ["FIT_SUMMARY_COLUMNS", "curves_frame", "rmse_table"]

#: The convergence columns of :func:`rmse_table` (from :meth:`Evaluation.fit_summary`).
FIT_SUMMARY_COLUMNS: tuple[str, ...] = ("fits", "converged", "steps_median", "steps_max", "final_loss_max")


def curves_frame(evaluations: Sequence[Evaluation]) -> pd.DataFrame:
    """Long table ``k1, curve, method, repetition, k, accuracy`` of every curve of the
    evaluations: ``true`` (exact, all classes), ``observed`` (exact, the sampled classes,
    k <= k1) and ``predicted`` (each method and repetition)."""

    def curves(evaluation: Evaluation) -> pd.DataFrame:
        parts = [
            pd.DataFrame({"curve": "true", "method": "", "repetition": -1, "k": evaluation.ks, "accuracy": evaluation.true_curve})
        ]
        observed_ks = np.arange(2, evaluation.k1 + 1)
        for rep, curve in enumerate(evaluation.observed):
            parts.append(
                pd.DataFrame({"curve": "observed", "method": "", "repetition": rep, "k": observed_ks, "accuracy": curve})
            )
        for method, predicted in evaluation.predicted.items():
            for rep, curve in enumerate(predicted):
                parts.append(
                    pd.DataFrame(
                        {"curve": "predicted", "method": method, "repetition": rep, "k": evaluation.ks, "accuracy": curve}
                    )
                )
        frame = pd.concat(parts, ignore_index=True)
        frame.insert(0, "k1", evaluation.k1)
        return frame

    return pd.concat([curves(evaluation) for evaluation in evaluations], ignore_index=True)


def rmse_table(evaluation: Evaluation) -> pd.DataFrame:
    """Per method: RMSE mean / median / sd over the repetitions, the mean predicted accuracy at
    the largest k beside the true one, and, when CleaneX ran, the median of each other method's
    RMSE ratio to CleaneX's and the share of repetitions CleaneX wins (Figure 3 E), and its
    fits' convergence: ``fits``, ``converged`` (how many stopped on a loss plateau),
    ``steps_median``, ``steps_max``, ``final_loss_max`` (NaN for the methods that do not train)."""
    summary = evaluation.summary().set_index("method")
    k_max = int(evaluation.ks[-1])
    frame = pd.DataFrame(
        {
            "k1": summary["k1"].astype(int),
            "k_max": k_max,
            "repetitions": summary["repetitions"].astype(int),
            "rmse_mean": summary["rmse_mean"],
            "rmse_median": summary["rmse_median"],
            "rmse_sd": summary["rmse_sd"],
            "predicted_at_k_max": [float(evaluation.predicted[m][:, -1].mean()) for m in summary.index],
            "true_at_k_max": float(evaluation.true_curve[-1]),
        },
        index=summary.index,
    )
    if "cleanex" in frame.index:
        comparison = reference_comparison(evaluation.rmse, "cleanex")
        frame["ratio_to_cleanex_median"] = comparison["ratio_median"].reindex(frame.index)
        frame["cleanex_wins"] = comparison["reference_wins"].reindex(frame.index)
        for column in FIT_SUMMARY_COLUMNS:
            frame[column] = summary[column]
    frame.index.name = "method"
    return frame
