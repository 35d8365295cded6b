"""Shared test fixtures and paths, and how the suite splits over pytest-xdist workers.

`make test` runs ``pytest -n auto --dist loadscope --no-loadscope-reorder``. Under it:

* Each test module runs whole on one worker (:class:`ModuleScheduling`), so that a
  module-scoped fixture (a Snakemake run, a trained model) is built once and not once per
  worker; different modules run side by side. A new test module with its own workflow run
  therefore runs in parallel with the others without any marker. (xdist's ``loadgroup`` would
  split finer, but its group markers are lost with pytest 9, and ``loadscope`` alone splits a
  module's test classes apart.) A session-scoped fixture is built once per worker.
* Tests marked ``workflow`` (the slow ones) are sent out first, so that no long run starts
  last while the other worker idles.
* Each worker's torch gets its share of the cores: torch's default, every core in every
  worker, oversubscribes the machine (CleaneX's training ran 3x slower).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from paths import REPO


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # the scheduler hands out modules in a worker's collection order
        items.sort(key=lambda item: item.get_closest_marker("workflow") is None)


@pytest.fixture(scope="session", autouse=True)
def _torch_threads_per_worker() -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // workers))


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest-xdist is in the dev extra; without it the suite runs in one process
    LoadScopeScheduling = None

if LoadScopeScheduling is not None:

    class ModuleScheduling(LoadScopeScheduling):
        """``--dist loadscope`` with one work unit per test module (classes included)."""

        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0]

    def pytest_xdist_make_scheduler(config: pytest.Config, log):
        return ModuleScheduling(config, log) if config.getvalue("dist") == "loadscope" else None
