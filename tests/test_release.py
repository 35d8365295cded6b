"""A release (docs/development.md#releases): the changelog's latest release is the version of
pyproject.toml and of the package, and the workflow catalogue's settings are keys it reads."""

from __future__ import annotations

import re
import tomllib

import yaml
from paths import REPO

import classwise

RELEASE_HEADER = re.compile(r"^## \[(?P<version>\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", re.MULTILINE)


def test_the_changelog_s_latest_release_is_the_version_of_pyproject_and_the_package() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    latest = RELEASE_HEADER.search(changelog)
    assert latest is not None, "CHANGELOG.md has no '## [X.Y.Z] - YYYY-MM-DD' header"
    assert latest["version"] == version == classwise.__version__
    # changes not yet released go above the latest release
    assert 0 <= changelog.find("\n## [Unreleased]\n") < latest.start()


def test_the_workflow_catalogue_settings_are_the_keys_it_reads() -> None:
    settings = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text(encoding="utf-8"))
    usage = settings["usage"]
    assert set(settings) == {"usage"} and set(usage) <= {"mandatory-flags", "software-stack-deployment", "report"}
    assert set(usage["mandatory-flags"]) <= {"desc", "flags"}
    deployment = usage["software-stack-deployment"]
    assert set(deployment) <= {"conda", "apptainer", "apptainer+conda"}
    assert all(isinstance(value, bool) for value in [*deployment.values(), usage["report"]])
    # what the catalogue needs beside it for its "standardized usage" (the deployment test runs them)
    assert (REPO / "workflow" / "Snakefile").is_file() and (REPO / "config" / "README.md").is_file()
