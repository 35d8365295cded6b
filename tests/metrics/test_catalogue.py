"""The metric catalogue: one entry per metric, every list of metric names a query of it, each
default stated once."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from paths import REPO

from classwise.cli import build_parser
from classwise.metrics import catalogue, suite
from classwise.metrics.bootstrap import BootstrapSettings, bootstrap_replicates
from classwise.metrics.catalogue import CATALOGUE, DEFAULTS, Metric, MetricParameters, metric_names
from classwise.metrics.probabilities import Probabilities
from classwise.metrics.result import MetricReplicates, MetricResult
from classwise.metrics.stats import compute_stats


def _random_scores(n: int = 300, c: int = 12, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, c, n)
    logits = rng.normal(size=(n, c))
    logits[np.arange(n), labels] += 1.0
    return logits, labels


def test_every_kernel_an_entry_names_exists() -> None:
    for entry in CATALOGUE:
        assert callable(catalogue.kernel(entry.compute)), entry.template
        if entry.replicate is not None:
            assert callable(catalogue.kernel(entry.replicate)), entry.template


def test_names_are_unique_and_templates_expand_in_place() -> None:
    names = metric_names(k=3, ns=(2, 4))
    assert len(names) == len(set(names))
    assert names[:3] == ("A", "WCA", "WCP")
    assert names.index("W2CR") < names.index("W4CR") < names.index("W2CR_exact") < names.index("W2CA")
    assert {"A@3", "WCA@3", "W2CR@3", "W4CR@3", "CFPS_max", "calibration_slope"} <= set(names)


def test_the_schema_and_the_command_line_default_to_the_catalogue() -> None:
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    metrics = schema["properties"]["metrics"]["properties"]
    assert metrics["worst_class"]["properties"]["k"]["default"] == DEFAULTS.k
    assert tuple(metrics["worst_class"]["properties"]["n"]["default"]) == DEFAULTS.ns
    assert metrics["decisiveness"]["properties"]["gamma"]["default"] == DEFAULTS.gamma
    assert metrics["decisiveness"]["properties"]["bins"]["default"] == DEFAULTS.bins
    for command in ("metrics", "compare"):
        args = build_parser(command).parse_args([command, "a.npz", *(["b.npz"] if command == "compare" else [])])
        assert (args.k, tuple(args.n), args.gamma, args.bins) == (DEFAULTS.k, DEFAULTS.ns, DEFAULTS.gamma, DEFAULTS.bins)


def test_evaluate_writes_every_catalogue_metric_in_catalogue_order_or_says_why_not() -> None:
    logits, labels = _random_scores(c=12)
    evaluation = suite.evaluate(logits, labels, parameters=MetricParameters(k=3, ns=(2, 20)))  # 20 >= 12 classes: skipped
    expected = metric_names(k=3, ns=(2, 20), where=lambda entry: not entry.needs_superclasses)  # none given
    computed = list(evaluation.metrics)
    assert computed == [name for name in expected if name not in evaluation.skipped]
    assert set(evaluation.skipped) == {"W20CR", "W20CR_exact", "W20CR@3"}


def test_the_bootstrap_resamples_every_metric_that_has_a_replicate_kernel() -> None:
    logits, labels = _random_scores(n=200, c=6)
    evaluation = suite.evaluate(
        logits, labels, parameters=MetricParameters(k=2, ns=(2,)), bootstrap=BootstrapSettings(20, seed=1)
    )
    assert evaluation.bootstrap is not None
    with_kernel = {name for entry in CATALOGUE if entry.replicate for name, _ in entry.instances(k=2, ns=(2,))}
    assert set(evaluation.bootstrap) == with_kernel - {"WSupCA", "WSupCR"}  # no superclasses given


def test_the_hard_prediction_and_label_set_lists_come_from_the_entries() -> None:
    assert catalogue.score_metric_names(5, (10,)) == ("WSupCA", "W2CA", "W2CA_balanced", "A@5", "WCA@5", "W10CR@5")
    assert catalogue.label_sets_metric_names("worst_class") == ("WSupCA", "W2CA", "W2CA_balanced")
    assert set(catalogue.label_sets_metric_names()) >= set(metric_names(family="decisiveness"))


def _median_class_recall(inputs, n=None) -> MetricResult:
    recall = inputs.stats.hits / inputs.stats.support
    return MetricResult(float(np.median(recall)))


def _median_class_recall_replicates(counts, n=None) -> MetricReplicates:
    return MetricReplicates(np.median(counts["hits1"] / counts.support_valid, axis=1))


def test_a_new_metric_is_one_entry_and_its_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe of docs/architecture.md: a function and one entry reach the suite's output, the
    bootstrap and the worst-class table, without touching any other list."""
    module = __name__
    entry = Metric(
        "MCR", "worst_class", "median class recall", f"{module}:_median_class_recall",
        f"{module}:_median_class_recall_replicates", table_row="always",
    )  # fmt: skip
    monkeypatch.setattr(catalogue, "CATALOGUE", (*CATALOGUE, entry))
    logits, labels = _random_scores(n=240, c=8)
    evaluation = suite.evaluate(
        logits, labels, parameters=MetricParameters(k=2, ns=(2,)), bootstrap=BootstrapSettings(30, seed=0)
    )
    stats = compute_stats(logits, labels)
    assert evaluation.metrics["MCR"].value == pytest.approx(np.median(stats.hits / stats.support))
    assert evaluation.bootstrap is not None and "MCR" in evaluation.bootstrap
    assert "MCR" in catalogue.paper_rows((2,), 2, superclasses=False)
    replicates = bootstrap_replicates(
        logits,
        stats,
        Probabilities.from_scores(logits, "logits"),
        parameters=MetricParameters(k=2, ns=(2,)),
        bootstrap=BootstrapSettings(5),
    )
    assert replicates["MCR"].values.shape == (5,)


def test_an_entry_without_a_replicate_kernel_gets_no_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    wca = next(entry for entry in CATALOGUE if entry.template == "WCA")
    monkeypatch.setattr(catalogue, "CATALOGUE", tuple(replace(e, replicate=None) if e is wca else e for e in CATALOGUE))
    logits, labels = _random_scores(n=120, c=4)
    evaluation = suite.evaluate(logits, labels, parameters=MetricParameters(k=2, ns=(2,)), bootstrap=BootstrapSettings(10))
    assert evaluation.bootstrap is not None
    assert "WCA" in evaluation.metrics and "WCA" not in evaluation.bootstrap and "A" in evaluation.bootstrap


def test_the_front_door_evaluates_and_the_metrics_package_exports_its_functions() -> None:
    import classwise
    import classwise.metrics as metrics

    logits, labels = _random_scores(n=90, c=5)
    evaluation = classwise.evaluate(logits, labels, parameters=MetricParameters(k=2, ns=(2,)))
    stats = metrics.compute_stats(logits, labels)
    assert evaluation.metrics["WCA"] == metrics.worst_class_accuracy(stats)
    assert evaluation.metrics["A"].value == pytest.approx(np.mean(logits.argmax(axis=1) == labels))
    for name in metrics.__all__:
        assert getattr(metrics, name) is not None, name
    assert callable(metrics.robust_fairness)  # the function, not its module
    with pytest.raises(AttributeError):
        metrics.no_such_metric  # noqa: B018
