"""The worst-class metrics as :class:`torchmetrics.Metric` subclasses.

Every metric keeps integer counts -- the confusion matrix, and where needed the per-class top-k
hits, the pairwise wins and the per-superclass restricted-argmax hits: the sufficient statistics
of :mod:`classwise.metrics.stats`, added batch by batch with the library's tie rules -- so a
distributed sync is a sum (``dist_reduce_fx="sum"``). ``compute()`` hands the summed counts to
the counts-level functions of :mod:`classwise.metrics.worst_class` and :mod:`classwise.metrics.cfps`,
so every value, tie and error is the library's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric

from classwise.errors import InputError, check_count
from classwise.metrics import cfps as cfps_metrics
from classwise.metrics import worst_class as wc
from classwise.metrics.result import MetricResult

__all__ = [
    "MaxClassFalsePositiveScore",
    "WorstClassAccuracy",
    "WorstClassPrecision",
    "WorstNClassRecall",
    "WorstSuperclassAccuracy",
    "WorstSuperclassRecall",
    "WorstTwoClassAccuracy",
]


def ranked_ahead(scores: Tensor, target: Tensor) -> Tensor:
    """``(N, C)`` bool: class ``j`` ranks ahead of the true class ``y``, i.e. ``s_j > s_y`` or
    (``s_j == s_y`` and ``j < y``) -- the order of :mod:`classwise.metrics.stats`. Its row sums
    are the true class's rank; its complement counts pairwise wins."""
    true_score = scores.gather(1, target[:, None])
    classes = torch.arange(scores.shape[1], device=scores.device)
    return (scores > true_score) | ((scores == true_score) & (classes[None, :] < target[:, None]))


class _WorstClassMetric(Metric):
    """Counts of ``(preds, target)`` batches; subclasses reduce them in :meth:`_result`.

    ``preds`` are ``(N, C)`` scores -- logits or probabilities, compared as they are (a softmax
    changes no order), higher = more likely -- or, for the metrics that need only the
    argmax, ``(N,)`` integer predictions; ``(N, C, ...)`` scores with ``(N, ...)`` targets
    are flattened, as torchmetrics' multiclass metrics do. ``target`` holds integer labels in
    ``[0, num_classes)``; those equal to ``ignore_index`` are left out.
    """

    is_differentiable = False
    higher_is_better: bool | None = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    confusion: Tensor
    topk_hits: Tensor
    pairwise_wins: Tensor
    superclass_hits: Tensor
    superclass_samples: Tensor
    superclass_members: Tensor

    def __init__(
        self,
        num_classes: int,
        *,
        ignore_index: int | None = None,
        validate_args: bool = True,
        return_classes: bool = False,
        top_k: int = 1,
        pairs: bool = False,
        superclasses: Mapping[Any, Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_classes = c = check_count(num_classes, "num_classes", minimum=2)
        if ignore_index is not None and (isinstance(ignore_index, bool) or not isinstance(ignore_index, int)):
            raise InputError(f"expected an integer or None, got {ignore_index!r}", field="ignore_index")
        self.ignore_index = ignore_index
        self.validate_args = bool(validate_args)
        self.return_classes = bool(return_classes)
        self.top_k = check_count(top_k, "top_k")
        self.add_state("confusion", default=torch.zeros(c, c, dtype=torch.long), dist_reduce_fx="sum")
        if self.top_k > 1:
            self.add_state("topk_hits", default=torch.zeros(c, dtype=torch.long), dist_reduce_fx="sum")
        self._restricted = False  # WSupCA's counts (_track_restricted_argmax)
        self._pairs = bool(pairs)
        if self._pairs:
            self.add_state("pairwise_wins", default=torch.zeros(c, c, dtype=torch.long), dist_reduce_fx="sum")
        self.superclass_names: list[Any] = []
        self._superclass_classes: list[np.ndarray] = []
        if superclasses is not None:
            groups = wc._validate_superclasses(superclasses, c)
            self.superclass_names = [name for name, _ in groups]
            self._superclass_classes = [classes for _, classes in groups]

    def _track_restricted_argmax(self) -> None:
        """Count, per superclass, its samples and those whose argmax restricted to its classes
        is the true class (WSupCA's terms)."""
        members = torch.zeros(len(self._superclass_classes), self.num_classes, dtype=torch.bool)
        for row, classes in enumerate(self._superclass_classes):
            members[row, torch.as_tensor(classes)] = True
        self.register_buffer("superclass_members", members, persistent=False)
        s = members.shape[0]
        self.add_state("superclass_hits", default=torch.zeros(s, dtype=torch.long), dist_reduce_fx="sum")
        self.add_state("superclass_samples", default=torch.zeros(s, dtype=torch.long), dist_reduce_fx="sum")
        self._restricted = True

    @property
    def _needs_scores(self) -> bool:
        return self.top_k > 1 or self._pairs or self._restricted

    # ------------------------------------------------------------------------- update

    def _inputs(self, preds: Tensor, target: Tensor) -> tuple[Tensor | None, Tensor, Tensor]:
        """``(scores (N, C) or None, predictions (N,), target (N,))``, checked and flattened."""
        if not isinstance(preds, Tensor) or not isinstance(target, Tensor):
            raise InputError("expected torch tensors for preds and target", field="preds")
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise InputError(f"expected integer class labels, got dtype {target.dtype}", field="target")
        c = self.num_classes
        scores: Tensor | None = None
        predictions: Tensor | None = None
        if preds.is_floating_point():
            if preds.ndim < 2 or preds.shape[1] != c or preds.shape[2:] != target.shape[1:] or preds.shape[0] != target.shape[0]:
                raise InputError(
                    f"expected scores of shape (N, {c}, ...) and target (N, ...), got {tuple(preds.shape)} and {tuple(target.shape)}",
                    field="preds",
                )
            scores = preds.movedim(1, -1).reshape(-1, c) if preds.ndim > 2 else preds
        else:
            if self._needs_scores:
                raise InputError(
                    f"{type(self).__name__} ranks classes: it needs (N, {c}) scores (logits or probabilities), "
                    "not class predictions",
                    field="preds",
                )
            if preds.shape != target.shape:
                raise InputError(
                    f"expected predictions of the target's shape {tuple(target.shape)}, got {tuple(preds.shape)}", field="preds"
                )
            predictions = preds.reshape(-1).long()
        target = target.reshape(-1).long()
        if self.ignore_index is not None:
            keep = target != self.ignore_index
            target = target[keep]
            scores = None if scores is None else scores[keep]
            predictions = None if predictions is None else predictions[keep]
        if scores is not None:
            predictions = scores.argmax(dim=1)  # the first maximum: ties go to the lower class index
        assert predictions is not None
        if self.validate_args:
            if ((target < 0) | (target >= c)).any():
                raise InputError(f"labels must lie in [0, {c}) (or equal ignore_index)", field="target")
            if scores is not None and torch.isnan(scores).any():
                raise InputError("scores contain NaN", field="preds")
            if scores is None and ((predictions < 0) | (predictions >= c)).any():
                raise InputError(f"predictions must lie in [0, {c})", field="preds")
        return scores, predictions, target

    def update(self, preds: Tensor, target: Tensor) -> None:
        """Add a batch: ``preds`` ``(N, C)`` logits or probabilities (or ``(N,)`` predicted
        classes where only the argmax counts), ``target`` ``(N,)`` labels."""
        scores, predictions, target = self._inputs(preds, target)
        c = self.num_classes
        self.confusion.view(-1).index_add_(0, target * c + predictions, torch.ones_like(target))
        if scores is None or not self._needs_scores:
            return
        ahead = ranked_ahead(scores, target)
        if self.top_k > 1:
            self.topk_hits.index_add_(0, target, (ahead.sum(dim=1) < self.top_k).long())
        if self._pairs:
            self.pairwise_wins.index_add_(0, target, (~ahead).long())  # the diagonal counts the support; unused
        if self._restricted:
            members = self.superclass_members
            in_superclass = members[:, target].T  # (N, S)
            # a member ranked ahead of the true class takes the restricted argmax (> 0 is exact in any float)
            member_ahead = (ahead.float() @ members.float().T) > 0
            self.superclass_hits += (in_superclass & ~member_ahead).sum(dim=0)
            self.superclass_samples += in_superclass.sum(dim=0)

    # ------------------------------------------------------------------------ compute

    def _counts(self) -> dict[str, np.ndarray]:
        confusion = self.confusion.cpu().numpy()
        return {
            "confusion": confusion,
            "hits": np.diagonal(confusion).copy(),
            "support": confusion.sum(axis=1),
            "predicted": confusion.sum(axis=0),
        }

    def _result(self) -> MetricResult:
        raise NotImplementedError

    def _class_indices(self, result: MetricResult) -> list[int]:
        return [int(c) for c in result.classes] or [-1]

    def compute(self) -> Tensor | tuple[Tensor, Tensor]:
        """The metric's value (a float32 scalar); with ``return_classes=True`` also the worst
        classes as a 1-D int64 tensor (see the class's docstring); ``-1`` where there is none."""
        result = self._result()
        value = torch.tensor(result.value, dtype=torch.float32, device=self.device)
        if not self.return_classes:
            return value
        return value, torch.tensor(self._class_indices(result), dtype=torch.long, device=self.device)


class WorstClassAccuracy(_WorstClassMetric):
    """Worst-class accuracy WCA (Bitterwolf et al., 2022, Eq. 2) or, with ``top_k > 1``, the
    worst-class top-k accuracy WCA@k (Eq. 9): the lowest per-class (top-k) recall over the
    classes with samples. ``return_classes``: the worst class, ``tensor([c])``.

    Equals :func:`classwise.metrics.worst_class.worst_class_accuracy` /
    :func:`~classwise.metrics.worst_class.worst_class_topk_accuracy` on all the data seen.
    """

    def __init__(self, num_classes: int, top_k: int = 1, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k=top_k, **kwargs)

    def _result(self) -> MetricResult:
        counts = self._counts()
        hits = counts["hits"] if self.top_k == 1 else self.topk_hits.cpu().numpy()
        return wc.worst_recall(hits, counts["support"])


class WorstClassPrecision(_WorstClassMetric):
    """Worst-class precision WCP (Eq. 3): the lowest per-class precision over the classes ever
    predicted. ``return_classes``: the worst class, ``tensor([c])``. Equals
    :func:`classwise.metrics.worst_class.worst_class_precision`."""

    def _result(self) -> MetricResult:
        counts = self._counts()
        return wc.worst_precision(counts["hits"], counts["predicted"])


class WorstNClassRecall(_WorstClassMetric):
    """Worst-n-class recall WnCR (Eq. 7) or, with ``top_k > 1``, WnCR@k (Eq. 10): the pooled
    recall of the ``n`` classes with the lowest individual recall (the paper's heuristic), or
    with ``exact=True`` the minimum over all n-subsets. ``return_classes``: the ``n``
    classes, worst first. Equals :func:`classwise.metrics.worst_class.worst_n_class_recall`
    / :func:`~classwise.metrics.worst_class.worst_n_class_recall_exact`."""

    def __init__(self, num_classes: int, n: int, top_k: int = 1, exact: bool = False, **kwargs: Any) -> None:
        super().__init__(num_classes, top_k=top_k, **kwargs)
        self.n = check_count(n, "n")
        if self.n > self.num_classes:
            raise InputError(f"expected n <= num_classes = {self.num_classes}, got {n}", field="n")
        self.exact = bool(exact)

    def _result(self) -> MetricResult:
        counts = self._counts()
        hits = counts["hits"] if self.top_k == 1 else self.topk_hits.cpu().numpy()
        return wc.worst_n_recall(hits, counts["support"], self.n, exact=self.exact)


class WorstTwoClassAccuracy(_WorstClassMetric):
    """Worst two-class accuracy W2CA (Eq. 6 with n = 2): over the pairs of classes with
    samples, the lowest accuracy of the argmax restricted to the pair, pooled (default) or
    class-balanced (``balanced=True``). ``return_classes``: the pair, ``tensor([a, b])``
    with ``a < b``. Equals :func:`classwise.metrics.worst_class.worst_pair_accuracy`.
    Keeps a ``(C, C)`` win count besides the confusion."""

    def __init__(self, num_classes: int, balanced: bool = False, **kwargs: Any) -> None:
        super().__init__(num_classes, pairs=True, **kwargs)
        self.balanced = bool(balanced)

    def _result(self) -> MetricResult:
        counts = self._counts()
        return wc.worst_pair(self.pairwise_wins.cpu().numpy(), counts["support"], balanced=self.balanced)


class _SuperclassMetric(_WorstClassMetric):
    def __init__(self, num_classes: int, superclasses: Mapping[Any, Sequence[int]], **kwargs: Any) -> None:
        super().__init__(num_classes, superclasses=superclasses, **kwargs)

    def _class_indices(self, result: MetricResult) -> list[int]:
        return [self.superclass_names.index(result.classes[0])]


class WorstSuperclassAccuracy(_SuperclassMetric):
    """Worst-superclass accuracy WSupCA (Eq. 4): per superclass, the accuracy of the argmax
    restricted to its classes, pooled over its samples; the lowest over the superclasses with
    samples. ``superclasses`` maps a name to class indices (they may overlap).
    ``return_classes``: the worst superclass's position in ``superclasses``
    (``metric.superclass_names`` lists them). Equals
    :func:`classwise.metrics.worst_class.worst_superclass_accuracy`."""

    def __init__(self, num_classes: int, superclasses: Mapping[Any, Sequence[int]], **kwargs: Any) -> None:
        super().__init__(num_classes, superclasses, **kwargs)
        self._track_restricted_argmax()

    def _result(self) -> MetricResult:
        hits = self.superclass_hits.cpu().numpy()
        samples = self.superclass_samples.cpu().numpy()
        return wc.worst_superclass(list(zip(self.superclass_names, hits.tolist(), samples.tolist())))


class WorstSuperclassRecall(_SuperclassMetric):
    """Worst-superclass recall WSupCR (Eq. 5): per superclass, the share of its samples whose
    (unrestricted) prediction is their class; the lowest over the superclasses with samples.
    ``return_classes`` as :class:`WorstSuperclassAccuracy`. Equals
    :func:`classwise.metrics.worst_class.worst_superclass_recall`."""

    def _result(self) -> MetricResult:
        counts = self._counts()
        hits, support = counts["hits"], counts["support"]
        per_super = [
            (name, int(hits[classes].sum()), int(support[classes].sum()))
            for name, classes in zip(self.superclass_names, self._superclass_classes)
        ]
        return wc.worst_superclass(per_super)


class MaxClassFalsePositiveScore(_WorstClassMetric):
    """The largest class false positive score, CFPS_max (Medi et al., 2024, Eq. 1):
    the share of all misclassifications that went to the class most often predicted wrongly;
    0 without errors. Lower is better. ``return_classes``: that class, ``tensor([c])``
    (``tensor([-1])`` without errors). Equals :func:`classwise.metrics.cfps.cfps_max`."""

    higher_is_better = False

    def _result(self) -> MetricResult:
        confusion = self._counts()["confusion"]
        if confusion.sum() == 0:
            raise InputError("no samples: call update() first", field="target")
        return cfps_metrics.cfps_max(confusion)
