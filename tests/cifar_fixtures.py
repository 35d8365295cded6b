"""A tiny CIFAR-100 in torchvision's on-disk layout (``cifar-100-python/{train,test,meta}``
pickles), for tests that read it through the ``torchvision`` dataset source."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

N_CLASSES = 100


def write_cifar100(root: Path, *, train_per_class: int = 2, test_per_class: int = 2, seed: int = 0) -> Path:
    """``root/cifar-100-python/`` with ``train_per_class`` / ``test_per_class`` images of each of
    the 100 classes: a random template per class plus noise, so that the class shows in the
    pixels. Returns ``root``."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True, exist_ok=True)
    templates = rng.integers(0, 256, size=(N_CLASSES, 3072))
    for split, per_class in (("train", train_per_class), ("test", test_per_class)):
        labels = np.tile(np.arange(N_CLASSES), per_class)  # classes interleaved, as in the real files
        noise = rng.normal(0, 40, size=(labels.size, 3072))
        data = np.clip(templates[labels] + noise, 0, 255).astype(np.uint8)
        entry = {"data": data, "fine_labels": labels.tolist(), "coarse_labels": (labels // 5).tolist()}
        (folder / split).write_bytes(pickle.dumps(entry))
    meta = {
        "fine_label_names": [f"class_{j:02d}" for j in range(N_CLASSES)],
        "coarse_label_names": [f"super_{j}" for j in range(20)],
    }
    (folder / "meta").write_bytes(pickle.dumps(meta))
    return root


def trust_cifar100_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let torchvision read the fixture: it checks the real files' md5s, and skips the check for
    an md5 of None."""
    from torchvision.datasets import CIFAR100

    monkeypatch.setattr(CIFAR100, "train_list", [["train", None]])
    monkeypatch.setattr(CIFAR100, "test_list", [["test", None]])
    monkeypatch.setattr(CIFAR100, "meta", {**CIFAR100.meta, "md5": None})
