"""classwise.torchmetrics: each metric, fed uneven batches, equals the library's function and a
naive computation (loops, scikit-learn) on all the data; accumulation, reset, the inputs
torchmetrics users pass, and a 2-process gloo run whose sync sums the counts."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import confusion_matrix, precision_score, recall_score

from classwise.errors import InputError
from classwise.metrics import cfps as cfps_metrics
from classwise.metrics import worst_class as wc
from classwise.metrics.stats import compute_stats
from classwise.torchmetrics import (
    MaxClassFalsePositiveScore,
    WorstClassAccuracy,
    WorstClassPrecision,
    WorstNClassRecall,
    WorstSuperclassAccuracy,
    WorstSuperclassRecall,
    WorstTwoClassAccuracy,
)

C = 7
SUPERCLASSES = {"odd": [1, 3, 5], "low": [0, 1, 2], "rest": [4, 6], "empty": [6]}
BATCHES = (0, 1, 60, 61, 200, 333)  # uneven, one of a single sample

# ----------------------------------------------------------------------------- naive references
# Loops over samples and classes with the library's documented order: class j ranks ahead of
# the label y iff s_j > s_y or (s_j == s_y and j < y); ties in a minimum go to the lowest index.


def _ahead(row: np.ndarray, y: int, j: int) -> bool:
    return row[j] > row[y] or (row[j] == row[y] and j < y)


def _rank(row: np.ndarray, y: int) -> int:
    return sum(_ahead(row, y, j) for j in range(len(row)))


def _predictions(scores: np.ndarray) -> np.ndarray:
    return np.array([max(range(C), key=lambda j: (row[j], -j)) for row in scores])


def _class_recalls(scores: np.ndarray, labels: np.ndarray, k: int) -> dict[int, float]:
    hits = {c: [_rank(row, y) < k for row, y in zip(scores, labels) if y == c] for c in range(C)}
    return {c: float(np.mean(h)) for c, h in hits.items() if h}


def _first_min(values: dict) -> tuple[float, tuple]:
    key = min(values, key=lambda c: (values[c], c))
    return values[key], key if isinstance(key, tuple) else (key,)


def naive_wca(scores, labels, k=1):
    if k == 1:  # scikit-learn's per-class recall, NaN for classes without samples
        recall = recall_score(labels, _predictions(scores), labels=range(C), average=None, zero_division=np.nan)
        return float(np.nanmin(recall)), (int(np.nanargmin(recall)),)
    return _first_min(_class_recalls(scores, labels, k))


def naive_wcp(scores, labels):
    precision = precision_score(labels, _predictions(scores), labels=range(C), average=None, zero_division=np.nan)
    return float(np.nanmin(precision)), (int(np.nanargmin(precision)),)


def naive_wncr(scores, labels, n, k=1, exact=False):
    ranks = np.array([_rank(row, y) for row, y in zip(scores, labels)])
    present = [c for c in range(C) if (labels == c).any()]

    def pooled(subset):
        rows = np.isin(labels, subset)
        return float(np.mean(ranks[rows] < k))

    if exact:
        return min(pooled(list(s)) for s in itertools.combinations(present, n)), None
    recalls = _class_recalls(scores, labels, k)
    worst = sorted(present, key=lambda c: (recalls[c], c))[:n]
    return pooled(worst), tuple(worst)


def naive_w2ca(scores, labels, balanced=False):
    present = [c for c in range(C) if (labels == c).any()]
    values = {}
    for a, b in itertools.combinations(present, 2):
        wins = {c: [not _ahead(row, c, other) for row, y in zip(scores, labels) if y == c] for c, other in ((a, b), (b, a))}
        if balanced:
            values[(a, b)] = (np.mean(wins[a]) + np.mean(wins[b])) / 2
        else:
            values[(a, b)] = (sum(wins[a]) + sum(wins[b])) / (len(wins[a]) + len(wins[b]))
    return _first_min(values)


def naive_wsup(scores, labels, restricted):
    values = {}
    predictions = _predictions(scores)
    for name, members in SUPERCLASSES.items():
        hits = []
        for row, y, p in zip(scores, labels, predictions):
            if y in members:
                choice = max(sorted(members), key=lambda j: (row[j], -j)) if restricted else p
                hits.append(choice == y)
        if hits:
            values[name] = float(np.mean(hits))
    worst = min(values, key=lambda name: (values[name], list(SUPERCLASSES).index(name)))
    return values[worst], (list(SUPERCLASSES).index(worst),)


def naive_cfps(scores, labels):
    matrix = confusion_matrix(labels, _predictions(scores), labels=range(C))
    false_positives = matrix.sum(axis=0) - np.diag(matrix)
    return float(false_positives.max() / false_positives.sum()), (int(np.argmax(false_positives)),)


# name -> (metric factory, library function of (scores, stats), naive function of (scores, labels))
CASES = {
    "WCA": (lambda: WorstClassAccuracy(C), lambda s, st: wc.worst_class_accuracy(st), naive_wca),
    "WCA@3": (
        lambda: WorstClassAccuracy(C, top_k=3),
        lambda s, st: wc.worst_class_topk_accuracy(st, 3),
        lambda s, y: naive_wca(s, y, k=3),
    ),
    "WCP": (lambda: WorstClassPrecision(C), lambda s, st: wc.worst_class_precision(st), naive_wcp),
    "W3CR": (lambda: WorstNClassRecall(C, 3), lambda s, st: wc.worst_n_class_recall(st, 3), lambda s, y: naive_wncr(s, y, 3)),
    "W2CR@2": (
        lambda: WorstNClassRecall(C, 2, top_k=2),
        lambda s, st: wc.worst_n_class_recall(st, 2, k=2),
        lambda s, y: naive_wncr(s, y, 2, k=2),
    ),
    "W3CR_exact": (
        lambda: WorstNClassRecall(C, 3, exact=True),
        lambda s, st: wc.worst_n_class_recall_exact(st, 3),
        lambda s, y: naive_wncr(s, y, 3, exact=True),
    ),
    "W2CA": (lambda: WorstTwoClassAccuracy(C), lambda s, st: wc.worst_pair_accuracy(st), naive_w2ca),
    "W2CA_balanced": (
        lambda: WorstTwoClassAccuracy(C, balanced=True),
        lambda s, st: wc.worst_pair_accuracy(st, balanced=True),
        lambda s, y: naive_w2ca(s, y, balanced=True),
    ),
    "WSupCA": (
        lambda: WorstSuperclassAccuracy(C, SUPERCLASSES),
        lambda s, st: wc.worst_superclass_accuracy(s, st, SUPERCLASSES),
        lambda s, y: naive_wsup(s, y, restricted=True),
    ),
    "WSupCR": (
        lambda: WorstSuperclassRecall(C, SUPERCLASSES),
        lambda s, st: wc.worst_superclass_recall(st, SUPERCLASSES),
        lambda s, y: naive_wsup(s, y, restricted=False),
    ),
    "CFPS_max": (
        lambda: MaxClassFalsePositiveScore(C),
        lambda s, st: cfps_metrics.cfps_max(st.confusion),
        naive_cfps,
    ),
}


def _data(seed: int, *, ties: bool, without_class: int | None = 6) -> tuple[np.ndarray, np.ndarray]:
    """Scores with many ties (small integers) or none, and labels that may leave a class out."""
    rng = np.random.default_rng(seed)
    n = BATCHES[-1]
    labels = rng.integers(0, C if without_class is None else C - 1, size=n)
    if ties:
        scores = rng.integers(0, 3, size=(n, C)).astype(np.float32)
    else:
        scores = rng.normal(size=(n, C)).astype(np.float32)
    scores[np.arange(n), labels] += rng.integers(0, 2, size=n)  # some signal
    return scores, labels


def _fed(metric, scores: np.ndarray, labels: np.ndarray, cuts=BATCHES):
    for start, stop in itertools.pairwise(cuts):
        metric.update(torch.from_numpy(scores[start:stop]), torch.from_numpy(labels[start:stop]))
    return metric


def _classes(tensor: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(c) for c in tensor.reshape(-1))


@pytest.mark.parametrize("ties", [True, False], ids=["ties", "no-ties"])
@pytest.mark.parametrize("name", list(CASES))
def test_each_metric_equals_the_library_and_a_naive_computation(name, ties):
    factory, library, naive = CASES[name]
    scores, labels = _data(seed=len(name), ties=ties)
    metric = _fed(factory(), scores, labels)
    metric.return_classes = True
    value, classes = metric.compute()

    expected = library(scores, compute_stats(scores, labels))
    assert value.dtype == torch.float32 and value.item() == np.float32(expected.value)
    reference_value, reference_classes = naive(scores, labels)
    assert value.item() == pytest.approx(reference_value, abs=1e-6)
    if name.startswith("WSup"):  # the library names the superclass, the metric gives its position
        assert _classes(classes) == (list(SUPERCLASSES).index(expected.classes[0]),) == reference_classes
    else:
        assert _classes(classes) == expected.classes
        if reference_classes is not None:
            assert _classes(classes) == reference_classes


@pytest.mark.parametrize("name", list(CASES))
def test_batches_add_up_to_one_update_and_reset_forgets(name):
    factory = CASES[name][0]
    scores, labels = _data(seed=1, ties=True)
    other_scores, other_labels = _data(seed=2, ties=True, without_class=None)
    batched, whole = _fed(factory(), scores, labels), _fed(factory(), scores, labels, cuts=(0, len(labels)))
    for state in batched._defaults:
        assert torch.equal(getattr(batched, state), getattr(whole, state)), state
    assert batched.compute().item() == whole.compute().item()

    batched.reset()
    _fed(batched, other_scores, other_labels)
    assert batched.compute().item() == _fed(factory(), other_scores, other_labels).compute().item()


def test_probabilities_logits_and_predicted_classes_give_the_same_values():
    scores, labels = _data(seed=3, ties=False)
    probabilities = torch.softmax(torch.from_numpy(scores).double(), dim=1)
    predicted = torch.from_numpy(scores).argmax(dim=1)
    target = torch.from_numpy(labels)
    for name, (factory, _, _) in CASES.items():
        from_logits = _fed(factory(), scores, labels).compute()
        from_probabilities = factory()
        from_probabilities.update(probabilities, target)
        assert from_probabilities.compute().item() == from_logits.item(), name
        only_argmax = factory()
        if only_argmax._needs_scores:  # ranks, pairs or a restricted argmax: classes are not enough
            with pytest.raises(InputError, match="needs .* scores"):
                only_argmax.update(predicted, target)
        else:
            only_argmax.update(predicted, target)
            assert only_argmax.compute().item() == from_logits.item(), name


def test_ignore_index_and_extra_dimensions_as_torchmetrics_takes_them():
    scores, labels = _data(seed=4, ties=True)
    ignored = labels.copy()
    ignored[::5] = -100
    metric = WorstTwoClassAccuracy(C, ignore_index=-100)
    metric.update(torch.from_numpy(scores), torch.from_numpy(ignored))
    kept = ignored != -100
    assert metric.compute().item() == np.float32(wc.worst_pair_accuracy(compute_stats(scores[kept], labels[kept])).value)

    # (N, C, H, W) scores with (N, H, W) labels are N * H * W samples
    images = torch.from_numpy(scores[:300]).reshape(3, 10, 10, C).permute(0, 3, 1, 2)
    per_pixel = WorstClassAccuracy(C, top_k=2)
    per_pixel.update(images, torch.from_numpy(labels[:300]).reshape(3, 10, 10))
    assert per_pixel.compute().item() == np.float32(
        wc.worst_class_topk_accuracy(compute_stats(scores[:300], labels[:300]), 2).value
    )


def test_bad_input_is_refused_with_the_field():
    metric = WorstClassAccuracy(C, top_k=2)
    scores = torch.zeros(4, C)
    with pytest.raises(InputError, match="target.*labels must lie in"):
        metric.update(scores, torch.tensor([0, 1, 2, C]))
    with pytest.raises(InputError, match="preds.*shape"):
        metric.update(torch.zeros(4, C + 1), torch.zeros(4, dtype=torch.long))
    with pytest.raises(InputError, match="NaN"):
        metric.update(torch.full((4, C), float("nan")), torch.zeros(4, dtype=torch.long))
    with pytest.raises(InputError, match="integer class labels"):
        metric.update(scores, torch.zeros(4))
    with pytest.raises(InputError, match="num_classes"):
        WorstClassAccuracy(1)
    with pytest.raises(InputError, match="class 7 is out of range|index 7 is out of range"):
        WorstSuperclassAccuracy(C, {"bad": [0, 7]})
    with pytest.raises(InputError, match="at least 1 class"):
        metric.compute()  # nothing seen yet
    metric.update(scores, torch.zeros(4, dtype=torch.long))
    with pytest.raises(InputError, match="n <= 1"):  # one class with samples
        _fed(WorstNClassRecall(C, 2), scores.numpy(), np.zeros(4, dtype=np.int64), cuts=(0, 4)).compute()


# One rank of a 2-process run: its uneven shard of data.npz, in batches; then compute() (which
# syncs the two ranks' counts). Rank 1 runs in a fresh interpreter, rank 0 in the test's own
# (torch and torchmetrics are imported already: one interpreter start instead of two).
_RANK_CODE = textwrap.dedent(
    """
    import datetime
    import numpy as np, torch, torch.distributed as dist
    from classwise.torchmetrics import WorstClassAccuracy, WorstTwoClassAccuracy, WorstSuperclassAccuracy

    def run_rank(rank, folder, ready=lambda: None):
        ready()  # rank 0 waits here until rank 1 has imported torch: the rendezvous times only the sync
        dist.init_process_group(
            "gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=2,
            timeout=datetime.timedelta(seconds=120),
        )
        try:
            data = np.load(f"{folder}/data.npz")
            scores, labels = torch.from_numpy(data["scores"]), torch.from_numpy(data["labels"])
            metrics = {
                "WCA@2": WorstClassAccuracy(7, top_k=2, return_classes=True),
                "W2CA": WorstTwoClassAccuracy(7, return_classes=True),
                "WSupCA": WorstSuperclassAccuracy(7, {"a": [0, 1, 2], "b": [3, 4, 5, 6]}, return_classes=True),
            }
            batches = [(0, 13), (13, 50)] if rank == 0 else [(50, len(labels))]
            out = {}
            for name, metric in metrics.items():
                for start, stop in batches:
                    metric.update(scores[start:stop], labels[start:stop])
                value, classes = metric.compute()
                out[name] = [value.item(), classes.reshape(-1).tolist()]
            return out
        finally:
            dist.destroy_process_group()
    """
)


def test_two_gloo_processes_sum_their_counts(tmp_path):
    scores, labels = _data(seed=5, ties=True)
    np.savez(tmp_path / "data.npz", scores=scores, labels=labels)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    # Rank 1 says it is ready (torch imported) before the rendezvous, so that gloo's timeout
    # covers the sync of two running processes, not an interpreter start on a loaded machine.
    rank_one = (
        _RANK_CODE
        + "\nimport json, pathlib, sys\n"
        + "ready = lambda: pathlib.Path(sys.argv[1], 'ready').touch()\n"
        + "json.dump(run_rank(1, sys.argv[1], ready), sys.stdout)\n"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", rank_one, str(tmp_path)],
        env=env | {"OMP_NUM_THREADS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    namespace: dict = {}
    exec(_RANK_CODE, namespace)

    def other_is_ready() -> None:
        while not (tmp_path / "ready").exists():
            assert other.poll() is None, f"rank 1 ended before the rendezvous: {other.communicate()[1]}"
            time.sleep(0.05)

    try:
        results = [namespace["run_rank"](0, str(tmp_path), other_is_ready)]
    finally:
        stdout, stderr = other.communicate()
    assert other.returncode == 0, stderr
    results.append(json.loads(stdout))

    stats = compute_stats(scores, labels)
    superclasses = {"a": [0, 1, 2], "b": [3, 4, 5, 6]}
    expected = {
        "WCA@2": wc.worst_class_topk_accuracy(stats, 2),
        "W2CA": wc.worst_pair_accuracy(stats),
        "WSupCA": wc.worst_superclass_accuracy(scores, stats, superclasses),
    }
    for rank, result in enumerate(results):
        for name, reference in expected.items():
            value, classes = result[name]
            assert value == np.float32(reference.value), (rank, name)
            assert classes == ([list(superclasses).index(reference.classes[0])] if name == "WSupCA" else list(reference.classes))
