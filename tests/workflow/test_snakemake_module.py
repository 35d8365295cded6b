"""classwise used from a user's own workflow as a Snakemake module (issue 28), offline: the user's
directory holds their Snakefile, their config and their data; the Snakefile names classwise's
Snakefile as a module (``module classwise: snakefile: ...; config: config``) and takes every rule
with a prefix (``use rule * from classwise as classwise_*``). The run goes to the end from the
user's directory: scripts, environments, schemas and report captions are found beside the
module's Snakefile, not in the working directory, and the tables carry their captions under the
prefixed rule names.

The run to the end is a deployment as the Snakemake workflow catalogue shows it (issue 42):
``snakedeploy deploy-workflow <repository> <directory> --tag v<version>`` from a local copy of
this repository, which writes the user's ``workflow/Snakefile`` naming classwise's
``workflow/Snakefile`` and copies ``config/`` and ``profiles/``; the user then edits
``config/config.yaml``. For a local source snakedeploy writes that path relative to the source
(a GitHub source gets ``github("<owner>/classwise", path="workflow/Snakefile", tag=...)``), so
the test names the local copy's file there, and prefixes the rules as docs/pipeline.md advises.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import yaml
from paths import REPO
from test_labels_shifts_workflow import _config, _write_files

pytestmark = pytest.mark.workflow

USER_SNAKEFILE = f"""\
configfile: "config/config.yaml"


module classwise:
    snakefile:
        "{REPO / "Snakefile"}"
    config:
        config


use rule * from classwise as classwise_*
"""


def _user_config(root: Path) -> dict:
    """The labels-shift study's files under ``root/data`` and its config, paths relative to ``root``;
    the models' files named by one pattern (``data/{model}_{shift}.csv``, issue 42)."""
    (root / "data").mkdir(parents=True)
    _write_files(root / "data")
    config = _config()
    dataset = config["datasets"]["contrast"]
    dataset["path"] = f"data/{dataset['path']}"
    for shift_set in dataset["shift_sets"].values():
        shift_set["files"] = {condition: f"data/{path}" for condition, path in shift_set["files"].items()}
    for model, entry in config["models"].items():
        for shift, path in entry["files"].items():
            (root / "data" / path).rename(root / "data" / f"{model}_{shift}.csv")
        entry["files"] = "data/{model}_{shift}.csv"
    return config


def _user_directory(root: Path) -> Path:
    """A user's workflow: their Snakefile naming classwise's by its path, config/config.yaml and data/."""
    config = _user_config(root)
    (root / "config").mkdir()
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "Snakefile").write_text(USER_SNAKEFILE)
    return root


def _release_copy(root: Path) -> Path:
    """This repository as a release holds it: the files git tracks, and those it would (not
    results/, resources/ or .venv/, which snakedeploy's copy of a local source would carry)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():  # a file deleted in the working tree is still listed
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    return root


def _deployed_directory(root: Path, source: Path) -> Path:
    """The user's directory as ``snakedeploy deploy-workflow`` writes it (the catalogue's command,
    offline), with the study's config in place of the demo's and its data."""
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    snakedeploy = Path(sys.executable).with_name("snakedeploy")  # the dev extra's, beside this Python
    deployed = subprocess.run(
        [str(snakedeploy), "deploy-workflow", str(source), str(root), "--tag", f"v{version}"], capture_output=True, text=True
    )
    assert deployed.returncode == 0, deployed.stderr[-4000:]
    assert "not found in traditional path" not in deployed.stderr  # it found classwise's workflow/Snakefile
    assert (root / "config" / "README.md").is_file() and (root / "profiles" / "default" / "config.yaml").is_file()
    snakefile = root / "workflow" / "Snakefile"
    text = snakefile.read_text()
    assert 'configfile: "config/config.yaml"' in text and "use rule * from classwise\n" in text
    assert text.count('"workflow/Snakefile"') == 1
    text = text.replace('"workflow/Snakefile"', f'"{source / "workflow" / "Snakefile"}"')
    snakefile.write_text(text.replace("use rule * from classwise\n", "use rule * from classwise as classwise_*\n"))
    config = _user_config(root)
    (root / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return root


def _snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``snakemake --cores 2`` run in the user's directory, on their own Snakefile."""
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=workdir, capture_output=True, text=True)


def test_a_deployment_by_snakedeploy_runs_classwise_as_a_module_to_the_end(tmp_path: Path) -> None:
    source = _release_copy(tmp_path / "classwise")
    user = _deployed_directory(tmp_path / "my-study", source)
    planned = _snakemake(user, "--dry-run")
    assert planned.returncode == 0, planned.stderr[-4000:]
    assert "classwise_import_predictions" in planned.stdout and "classwise_analyse_classwise_robustness" in planned.stdout
    result = _snakemake(user)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = pd.read_csv(user / "results/tables/contrast/robustness/shift_summary.csv")
    assert set(summary["shift"]) == {"clean", "contrast_c50", "contrast_c30", "sketch_s"}
    assert set(summary["model"]) == {"s01", "s02", "s03"}
    # the caption follows the rule under its prefixed name
    caption = (user / "results/tables/contrast/robustness/shift_summary.md").read_text().splitlines()[0]
    assert caption.startswith("contrast: accuracy A and worst-class accuracy WCA")
    assert (user / "results/README.md").is_file()
    assert not (REPO / "results" / "tables" / "contrast").exists()  # nothing written beside the module
    assert not (source / "results").exists()


def test_a_bad_config_of_the_user_s_workflow_names_their_config_file(tmp_path: Path) -> None:
    user = _user_directory(tmp_path / "my-study")
    config = yaml.safe_load((user / "config" / "config.yaml").read_text())
    config["models"]["s01"]["files"] = "data/{model}_{condition}.csv"
    (user / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = _snakemake(user, "--dry-run")
    assert result.returncode != 0
    assert (
        f"{user / 'config' / 'config.yaml'}: field 'models.s01.files': unknown placeholder {{condition}} in "
        "'data/{model}_{condition}.csv'; known: {model}, {dataset}, {shift}"
    ) in result.stdout + result.stderr


def test_models_sharing_a_decode_plan_under_the_module_s_prefix(tmp_path: Path) -> None:
    """inference.models_per_decode 2 in a user's workflow: the generated infer_models_<dataset>
    rule takes the prefix and the prefixed infer's threads, and wins over infer as it does alone."""
    user = tmp_path / "my-study"
    (user / "config").mkdir(parents=True)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["inference"] = {**config.get("inference", {}), "models_per_decode": 2}
    (user / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (user / "Snakefile").write_text(USER_SNAKEFILE)
    planned = _snakemake(user, "--dry-run", "--set-threads", "classwise_infer=2")
    assert planned.returncode == 0, planned.stderr[-4000:]
    jobs = planned.stdout.split("\nrule ")
    blocks = [job for job in jobs if job.startswith("classwise_infer_models_digits:")]
    assert blocks and all("threads: 2" in block for block in blocks)
    # the demo's clean image and five corruptions: one group job each, no per-model infer job for them
    assert len(blocks) == 6
    assert not any(job.startswith("classwise_infer:") and "shift=clean" in job for job in jobs)
    assert any(job.startswith("classwise_infer:") and "shift=pgd_linf_eps0.1" in job for job in jobs)
