"""The robustness steps of classwise.steps.robustness that only the pipeline runs called before:
the transformation tests, the targeted attacks' success rates, the transfer matrix and the
corruption grid, on tiny outputs files made here, each table against a count by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from classwise.errors import InputError
from classwise.logits_io import save_logits
from classwise.steps import robustness as robustness_steps

NAMES = ["cat", "dog", "fox"]


def _save(path: Path, ids: list[str], labels: list[int], predicted: list[int], names: list[str] = NAMES) -> Path:
    """An outputs file whose top-1 prediction of sample ``ids[i]`` is ``predicted[i]``."""
    logits = np.full((len(ids), len(names)), -1.0, dtype=np.float32)
    logits[np.arange(len(ids)), predicted] = 2.0
    path.parent.mkdir(parents=True, exist_ok=True)
    save_logits(
        path,
        logits=logits,
        labels=np.asarray(labels),
        sample_ids=np.asarray(ids),
        class_names=np.asarray(names),
        metadata={},
    )
    return path


def _table_paths(folder: Path, stem: str) -> dict[str, Path]:
    return {"markdown": folder / f"{stem}.md", "csv": folder / f"{stem}.csv", "latex": folder / f"{stem}.tex"}


def _written(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


IDS = [f"s{i:02d}" for i in range(12)]
LABELS = [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
CLEAN = [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 0]  # 10 of 12 right


# ---------------------------------------------------------------------------- transformation tests


def _status(value: float, warn: float, fail: float) -> str:
    return "fail" if value > fail else "warn" if value > warn else "pass"


def test_transformation_tests_step_writes_each_shift_against_clean_as_counted_by_hand(tmp_path: Path) -> None:
    clean = _save(tmp_path / "in" / "clean.npz", IDS, LABELS, CLEAN)
    fog_predicted = [0, 1, 0, 1, 1, 2, 1, 1, 2, 0, 2, 0]  # 3 flips from clean
    order = np.random.default_rng(0).permutation(len(IDS))  # rows in another order than clean's
    fog = _save(
        tmp_path / "in" / "fog.npz",
        [IDS[i] for i in order],
        [LABELS[i] for i in order],
        [fog_predicted[i] for i in order],
    )
    own = _save(tmp_path / "in" / "own.npz", ["s11", "s00", "s05"], [2, 0, 1], [2, 0, 0])  # a subset: its own labels file
    paths = _table_paths(tmp_path / "out", "transformation_tests_m")
    thresholds = {"flip_rate": {"warn": 0.2, "fail": 0.3}, "accuracy_drop": {"fail": 0.2}}
    robustness_steps.transformation_tests_step(
        clean_path=clean,
        shifted_paths={"fog": fog, "own": own},
        thresholds=thresholds,
        caption="Transformation tests of m.",
        table_paths=paths,
        subsets=["own"],
    )
    table = pd.read_csv(paths["csv"], index_col="shift", keep_default_na=False)
    assert table.index.tolist() == ["fog", "own"]
    by_id = dict(zip(IDS, zip(LABELS, CLEAN)))
    limits = {"accuracy_drop": (0.05, 0.2), "macro_f1_drop": (0.05, 0.10), "flip_rate": (0.2, 0.3)}
    shifts = {"fog": (IDS, fog_predicted), "own": (["s11", "s00", "s05"], [2, 0, 0])}
    for shift, (ids, predicted) in shifts.items():
        y = np.array([by_id[i][0] for i in ids])
        before = np.array([by_id[i][1] for i in ids])
        after = np.asarray(predicted)
        row = table.loc[shift]
        expected = {
            "n_samples": len(ids),
            "clean_n": len(IDS),
            "clean_accuracy": np.mean(before == y),
            "accuracy": np.mean(after == y),
            "clean_macro_f1": f1_score(y, before, average="macro", zero_division=0),
            "macro_f1": f1_score(y, after, average="macro", zero_division=0),
            "flip_rate": np.mean(before != after),
            "flip_rate_n": len(ids),
        }
        expected["accuracy_drop"] = expected["clean_accuracy"] - expected["accuracy"]
        expected["macro_f1_drop"] = expected["clean_macro_f1"] - expected["macro_f1"]
        for column, value in expected.items():
            assert row[column] == pytest.approx(value, abs=1e-12), (shift, column)
        statuses = {name: _status(expected[name], *limits[name]) for name in limits}
        for name, status in statuses.items():
            assert row[f"{name}_status"] == status, (shift, name)
        worst = max(statuses.values(), key=["pass", "warn", "fail"].index)
        assert row["status"] == worst
    assert table.loc["fog", "flip_rate"] == pytest.approx(0.25) and table.loc["fog", "flip_rate_status"] == "warn"
    # Markdown and LaTeX: the caption, then the numbers to four decimals
    markdown = paths["markdown"].read_text()
    assert markdown.startswith("Transformation tests of m.\n\n")
    assert f"| {table.loc['fog', 'clean_macro_f1']:.4f} |" in markdown
    assert "Transformation tests of m." in paths["latex"].read_text()


def test_transformation_tests_step_refuses_unknown_thresholds_naming_the_config_field(tmp_path: Path) -> None:
    clean = _save(tmp_path / "clean.npz", IDS, LABELS, CLEAN)
    paths = _table_paths(tmp_path / "out", "t")
    with pytest.raises(InputError) as raised:
        robustness_steps.transformation_tests_step(
            clean_path=clean,
            shifted_paths={"fog": clean},
            thresholds={"flip_rat": {"warn": 0.1}},
            caption="c",
            table_paths=paths,
        )
    assert raised.value.field == "robustness.transformation_tests.thresholds.flip_rat"
    assert _written(tmp_path / "out") == []


def test_transformation_tests_step_refuses_a_shift_without_every_clean_sample_unless_it_is_a_subset(tmp_path: Path) -> None:
    clean = _save(tmp_path / "clean.npz", IDS, LABELS, CLEAN)
    part = _save(tmp_path / "part.npz", IDS[:-1], LABELS[:-1], CLEAN[:-1])
    paths = _table_paths(tmp_path / "out", "t")
    with pytest.raises(InputError, match="lacks 1 clean sample id") as raised:
        robustness_steps.transformation_tests_step(
            clean_path=clean, shifted_paths={"part": part}, thresholds={}, caption="c", table_paths=paths
        )
    assert raised.value.path == str(part) and raised.value.field == "sample_ids"
    assert _written(tmp_path / "out") == []
    robustness_steps.transformation_tests_step(
        clean_path=clean, shifted_paths={"part": part}, thresholds={}, caption="c", table_paths=paths, subsets=["part"]
    )
    row = pd.read_csv(paths["csv"], index_col="shift").loc["part"]
    assert row["n_samples"] == len(IDS) - 1 and row["flip_rate"] == 0.0 and row["status"] == "pass"


# ---------------------------------------------------------------------------- targeted attacks


def _brute_targeted(labels: dict[str, int], clean: dict[str, int], attacked: dict[str, int], target: int) -> dict[str, float]:
    """Success and clean rate of one run towards ``target``, sample by sample."""
    others = [i for i in attacked if labels[i] != target]
    success = sum(attacked[i] == target for i in others)
    return {
        "n_attacked": len(others),
        "n_success": success,
        "success_rate": success / len(others),
        "clean_rate": sum(clean[i] == target for i in others) / len(others),
    }


def test_targeted_success_step_counts_each_target_s_hits_and_draws_nan_where_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import classwise.plots.robustness as robustness_plots

    drawn: dict[str, object] = {}
    real_plot = robustness_plots.plot_targeted_success

    def spy(rates, class_names, **kwargs):  # type: ignore[no-untyped-def]
        drawn.update(rates=rates, class_names=list(class_names), **kwargs)
        return real_plot(rates, class_names, **kwargs)

    monkeypatch.setattr(robustness_plots, "plot_targeted_success", spy)
    labels = dict(zip(IDS, LABELS))
    clean = {"a": dict(zip(IDS, CLEAN)), "b": dict(zip(IDS, [0] * 4 + [1] * 4 + [1] * 4))}
    attacks = {
        ("a", 0): dict(zip(IDS, [0, 0, 0, 0, 0, 1, 0, 1, 0, 2, 2, 0])),
        ("a", 2): dict(zip(IDS, [2, 2, 0, 1, 2, 1, 1, 1, 2, 2, 2, 2])),
        # b's run towards class 1 holds five samples (a per_class run), in another order than clean's
        ("b", 1): {"s09": 1, "s00": 1, "s04": 1, "s10": 2, "s02": 0},
    }
    runs: dict[str, dict[int, Path]] = {}
    clean_paths = {}
    for model, predicted in clean.items():
        clean_paths[model] = _save(tmp_path / model / "clean.npz", IDS, LABELS, [predicted[i] for i in IDS])
    for (model, target), predicted in attacks.items():
        ids = list(predicted)
        path = _save(tmp_path / model / f"pgd_targeted_{target}.npz", ids, [labels[i] for i in ids], list(predicted.values()))
        runs.setdefault(model, {})[target] = path
    paths = _table_paths(tmp_path / "out", "targeted_success")
    robustness_steps.targeted_success_step(
        runs=runs, clean_paths=clean_paths, title="Targeted PGD", figure_path=tmp_path / "out" / "fig.png", table_paths=paths
    )
    table = pd.read_csv(paths["csv"], index_col=["model", "target"])
    assert table.index.tolist() == [("a", 0), ("a", 2), ("b", 1)]
    for (model, target), predicted in attacks.items():
        row = table.loc[(model, target)]
        assert row["class_name"] == NAMES[target]
        for column, value in _brute_targeted(labels, clean[model], predicted, target).items():
            assert row[column] == pytest.approx(value, abs=1e-12), (model, target, column)
    # the figure: a's rate towards class 1 and b's towards 0 and 2 were not run (NaN, no bar)
    assert drawn["class_names"] == NAMES and drawn["title"] == "Targeted PGD"
    rates = drawn["rates"]
    assert list(rates) == ["a", "b"]
    np.testing.assert_array_equal(rates["a"], [table.loc[("a", 0), "success_rate"], np.nan, table.loc[("a", 2), "success_rate"]])
    np.testing.assert_array_equal(rates["b"], [np.nan, table.loc[("b", 1), "success_rate"], np.nan])
    assert (tmp_path / "out" / "fig.png").read_bytes().startswith(b"\x89PNG")
    assert paths["markdown"].read_text().startswith("Targeted PGD: success rate = share of samples not of the target class")


def test_targeted_success_step_refuses_a_run_with_a_sample_the_clean_file_lacks(tmp_path: Path) -> None:
    clean = _save(tmp_path / "clean.npz", IDS[:-1], LABELS[:-1], CLEAN[:-1])
    run = _save(tmp_path / "pgd_targeted_0.npz", IDS, LABELS, [0] * len(IDS))
    out = tmp_path / "out"
    with pytest.raises(InputError, match="1 of 12 sample") as raised:
        robustness_steps.targeted_success_step(
            runs={"a": {0: run}},
            clean_paths={"a": clean},
            title="t",
            figure_path=out / "fig.png",
            table_paths=_table_paths(out, "t"),
        )
    assert raised.value.path == str(clean)
    assert _written(out) == []


# ---------------------------------------------------------------------------- transfer matrix


def _brute_cell(labels: dict[str, int], clean: dict[str, int], transferred: dict[str, int]) -> dict[str, object]:
    """One cell of the matrix, sample by sample: accuracies on the transferred samples and the
    class of lowest accuracy among those with samples (ties: the lowest index, and how many)."""
    ids = list(transferred)
    recall = {}
    for c in range(len(NAMES)):
        of_c = [i for i in ids if labels[i] == c]
        if of_c:
            recall[c] = sum(transferred[i] == c for i in of_c) / len(of_c)
    lowest = min(recall.values())
    worst = min(c for c, r in recall.items() if r == lowest)
    return {
        "samples": len(ids),
        "clean_accuracy": sum(clean[i] == labels[i] for i in ids) / len(ids),
        "robust_accuracy": sum(transferred[i] == labels[i] for i in ids) / len(ids),
        "worst_class": NAMES[worst],
        "worst_class_accuracy": lowest,
        "worst_class_tied": sum(r == lowest for r in recall.values()),
    }


def test_transfer_matrix_step_writes_every_pair_as_counted_by_hand_and_says_which_rows_are_subsets(tmp_path: Path) -> None:
    labels = dict(zip(IDS, LABELS))
    clean = {"m1": dict(zip(IDS, CLEAN)), "m2": dict(zip(IDS, LABELS))}
    transferred = {
        ("m1", "pgd", "m2"): dict(zip(IDS, [0, 1, 0, 0, 1, 1, 0, 1, 2, 2, 1, 2])),
        ("m2", "pgd", "m1"): dict(zip(IDS, [0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2])),
        # a per_class attack: eight of the twelve samples, shuffled
        ("m2", "fgsm", "m1"): {
            i: p for i, p in zip(IDS[::-1], [2, 2, 1, 2, 1, 0, 1, 1, 0, 0, 1, 0]) if i not in ("s03", "s07", "s06", "s10")
        },
    }
    clean_paths = {model: _save(tmp_path / model / "clean.npz", IDS, LABELS, [p[i] for i in IDS]) for model, p in clean.items()}
    transfer_paths = {}
    for (source, attack, target), predicted in transferred.items():
        ids = list(predicted)
        transfer_paths[(source, attack, target)] = _save(
            tmp_path / target / f"transfer_{source}_{attack}.npz", ids, [labels[i] for i in ids], list(predicted.values())
        )
    paths = _table_paths(tmp_path / "out", "transfer_matrix")
    robustness_steps.transfer_matrix_step(
        clean_paths=clean_paths, transfer_paths=transfer_paths, caption="Transfer attacks.", table_paths=paths
    )
    cells = pd.read_csv(paths["csv"], keep_default_na=False)
    assert list(zip(cells["source"], cells["attack"], cells["target"])) == list(transferred)
    for row, ((_, _, target), predicted) in zip(cells.to_dict("records"), transferred.items()):
        expected = _brute_cell(labels, clean[target], predicted)
        assert {key: row[key] for key in expected} == pytest.approx(expected, abs=1e-12)
    # the matrix: rows source / attack, columns the targets in order (m2, m1), each cell
    # "A (worst class: its accuracy)", and a last column n
    markdown = paths["markdown"].read_text()
    first = _brute_cell(labels, clean["m2"], transferred[("m1", "pgd", "m2")])
    assert first["worst_class_tied"] == 3  # every class at 0.75: the name is the tie rule's, and the cell says so
    cell = f"{first['robust_accuracy']:.4f} ({first['worst_class']}; 3 tied: {first['worst_class_accuracy']:.4f})"
    assert f"| m1 / pgd | {cell} | - | 12 |" in markdown
    assert "| m2 / fgsm | - | " in markdown and markdown.split("| m2 / fgsm |")[1].split("\n")[0].endswith(" | 8 |")
    caption = markdown.split("\n\n", 1)[0]
    assert caption.startswith("Transfer attacks. n: the images of each row")
    assert "Over a subset of the clean images: n = 8-12 transferred images of 12" in caption


def test_transfer_matrix_step_says_clean_and_transferred_images_are_matched_when_no_row_is_a_subset(tmp_path: Path) -> None:
    clean = _save(tmp_path / "clean.npz", IDS, LABELS, CLEAN)
    moved = _save(tmp_path / "moved.npz", IDS[::-1], LABELS[::-1], LABELS[::-1])
    paths = _table_paths(tmp_path / "out", "t")
    robustness_steps.transfer_matrix_step(
        clean_paths={"m": clean}, transfer_paths={("s", "pgd", "m"): moved}, caption="T.", table_paths=paths
    )
    caption = paths["markdown"].read_text().split("\n\n", 1)[0]
    assert caption.endswith("Clean and transferred images matched by sample id.")
    row = pd.read_csv(paths["csv"]).iloc[0]
    assert row["robust_accuracy"] == 1.0 and row["clean_accuracy"] == pytest.approx(10 / 12) and row["worst_class_tied"] == 3


def test_transfer_matrix_step_refuses_a_target_without_clean_outputs_or_with_other_labels(tmp_path: Path) -> None:
    clean = _save(tmp_path / "clean.npz", IDS, LABELS, CLEAN)
    relabelled = _save(tmp_path / "relabelled.npz", IDS, LABELS[1:] + LABELS[:1], CLEAN)
    out = tmp_path / "out"
    with pytest.raises(InputError, match="no clean outputs of target model 'other'") as raised:
        robustness_steps.transfer_matrix_step(
            clean_paths={"m": clean},
            transfer_paths={("m", "pgd", "other"): clean},
            caption="T.",
            table_paths=_table_paths(out, "t"),
        )
    assert raised.value.field == "clean"
    with pytest.raises(InputError, match="label the same samples differently") as raised:
        robustness_steps.transfer_matrix_step(
            clean_paths={"m": clean},
            transfer_paths={("s", "pgd", "m"): relabelled},
            caption="T.",
            table_paths=_table_paths(out, "t"),
        )
    assert raised.value.path == str(relabelled) and raised.value.field == "labels"
    assert _written(out) == []


# ---------------------------------------------------------------------------- corruption grid

GRID = {"corruptions": ["gaussian_noise", "vertical_flip"], "severities": [1, 4]}


def _direct_grid(path: Path, image: np.ndarray, sample_id: str, dataset: str, seed: int) -> bytes:
    """The grid drawn by the plotting function itself, as the step should draw it."""
    from classwise.plots.corruption_grid import plot_corruption_grid

    plot_corruption_grid(
        image,
        sample_id=sample_id,
        base_seed=seed,
        path=path,
        title=f"{dataset}: sample {sample_id} under every corruption",
        **GRID,
    )
    return path.read_bytes()


def test_corruption_grid_step_draws_the_chosen_test_image_and_the_last_one_past_the_end(tmp_path: Path) -> None:
    from classwise.data.digits import load_digits_split

    dataset = {"source": "sklearn_digits", "test_fraction": 0.5, "split_seed": 0}
    _, test = load_digits_split(test_fraction=0.5, seed=0)
    for index, expected in ((5, 5), (10**6, len(test) - 1)):
        figure = tmp_path / f"grid_{index}.png"
        robustness_steps.corruption_grid_step(
            dataset_name="digits", dataset_cfg=dataset, seed=7, sample_index=index, figure_path=figure, **GRID
        )
        reference = _direct_grid(tmp_path / "reference.png", test.images[expected], str(test.sample_ids[expected]), "digits", 7)
        assert figure.read_bytes() == reference, index


def test_corruption_grid_step_decodes_one_image_of_a_folder_as_the_folder_holds_it(tmp_path: Path) -> None:
    from PIL import Image

    from classwise.data.stand_ins import image_folder_fixture

    root = image_folder_fixture(tmp_path / "folder", ["b_class", "a_class"], per_class=2, size=(12, 10))
    figure = tmp_path / "grid.png"
    robustness_steps.corruption_grid_step(
        dataset_name="f",
        dataset_cfg={"source": "image_folder", "root": str(root)},
        seed=3,
        sample_index=2,
        figure_path=figure,
        **GRID,
    )
    # ImageFolder order: classes sorted by name, then files; index 2 is b_class/00000.png
    pixels = np.asarray(Image.open(root / "b_class" / "00000.png"), dtype=np.float32).transpose(2, 0, 1) / np.float32(255)
    assert figure.read_bytes() == _direct_grid(tmp_path / "reference.png", pixels, "b_class/00000.png", "f", 3)


def test_corruption_grid_step_refuses_an_unknown_corruption_and_draws_nothing(tmp_path: Path) -> None:
    figure = tmp_path / "out" / "grid.png"
    with pytest.raises(InputError, match="fog"):
        robustness_steps.corruption_grid_step(
            dataset_name="digits",
            dataset_cfg={"source": "sklearn_digits"},
            seed=0,
            corruptions=["fog"],
            severities=[1],
            sample_index=0,
            figure_path=figure,
        )
    assert not figure.exists()
