# classwise: every target creates .venv if it is missing and installs the project into it.
#   make run     the default workflow (config/config.yaml, the embedded demo) into results/;
#                VERBOSE=1 prints Snakemake's own output instead of the progress line
#   make test    lint the workflow and run the test suite
#   make report  the HTML report of the last run (snakemake --report) -> results/report.html
#   make bench   speed and memory benchmarks (install, metrics, predictions files, PGD, AutoAttack, bootstrap, pipeline,
#                inference overlap, precision, demo, explorer) -> results/bench/
#   make docs    the documentation site (docs/ and the docstrings, mkdocs) -> results/site/index.html
#   make soak    CI's suite on fresh clones beside CPU hogs, repeatedly -> results/soak/ (docs/development.md)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The torch/torchvision pair that imports together on the project's machines (from local disk).
TORCH_PINS ?= torch==2.14.1 torchvision==0.29.1
# An extra package index for torch, e.g. PyTorch's CPU-only wheels on a machine without a GPU:
#   make install TORCH_INDEX=https://download.pytorch.org/whl/cpu   (docs/install.md; untested here)
TORCH_INDEX ?=
# auto: uv when it can be had (on PATH, or bootstrapped with pip), pip when not or when uv fails;
# uv or pip forces one (tools/install_env.py).
INSTALLER ?= auto
CORES ?= all
CONFIG ?= config/config.yaml
PYTEST_ARGS ?=
# One pytest-xdist worker per core, each test module whole on one worker, workflow tests first
# (tests/conftest.py). PYTEST_PARALLEL= runs the suite in one process.
PYTEST_PARALLEL ?= -n auto --dist loadscope --no-loadscope-reorder
# The ResNet-18 PGD row takes minutes on a CPU: PGD_BENCH_ARGS="--models demo_cnn_8x8" skips it.
PGD_BENCH_ARGS ?=
# AutoAttack beside torchattacks on the demo CNN (about 2 minutes on a CPU); the ResNet-18 at 32 px
# too: AUTOATTACK_BENCH_ARGS="--models demo_cnn_8x8 timm_resnet18_32x32" (much longer on a CPU).
AUTOATTACK_BENCH_ARGS ?=
# Timing a fresh pip install too adds about 3 minutes: INSTALL_BENCH_ARGS=--pip.
INSTALL_BENCH_ARGS ?=
# make soak: runs of .ci/run on fresh clones, each beside this many busy-looping processes.
SOAK_RUNS ?= 10
SOAK_HOGS ?= 2
REPORT ?= results/report.html
SITE ?= results/site

.PHONY: install install-dev run report test lint docs bench soak clean

# Two installs (docs/install.md), each renewed when pyproject.toml changes: make run and make report
# install what the pipeline needs (the pipeline and models extras, torch pinned); make test, lint,
# docs and bench add the tools of the tests and the docs (the dev extra, which holds every extra,
# so its install renews the run's marker too).
INSTALL_ENV = $(PYTHON) tools/install_env.py --venv $(VENV) --installer $(INSTALLER) -- $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) $(TORCH_PINS)

$(VENV)/.installed-run: pyproject.toml
	$(INSTALL_ENV) -e ".[pipeline,models]"
	touch $@

$(VENV)/.installed-dev: pyproject.toml
	$(INSTALL_ENV) -e ".[dev]"
	touch $@ $(VENV)/.installed-run

install: $(VENV)/.installed-run

install-dev: $(VENV)/.installed-dev

# The console prints a progress line, a failed job's cause and log, and where to look at the end
# (snakemake --logger classwise: classwise.pipeline.console); VERBOSE=1 prints Snakemake's own output.
run: install
	@$(BIN)/python -m classwise.pipeline.config_file $(CONFIG)  # a YAML error with its line number
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG)$(if $(VERBOSE),, --logger classwise)

report: install
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG) --report $(REPORT) --report-stylesheet workflow/report/report.css

lint: install-dev
	$(BIN)/snakefmt --check Snakefile workflow/
	$(BIN)/snakemake --lint --configfile $(CONFIG)
	$(BIN)/lint-imports
	$(BIN)/ruff check src tests scripts tools
	$(BIN)/ruff format --check src tests scripts tools
	$(BIN)/mypy src
	$(BIN)/mkdocs build --strict --quiet --site-dir $(SITE)  # a broken link, anchor or page fails

docs: install-dev
	$(BIN)/mkdocs build --strict --site-dir $(SITE)

test: lint
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

bench: install-dev
	$(PYTHON) tools/bench_install.py --out results/bench/install.json $(INSTALL_BENCH_ARGS) -- $(TORCH_PINS) -e ".[dev]"
	$(BIN)/python -m classwise.bench.metrics --out results/bench/metrics.json
	$(BIN)/python -m classwise.bench.predictions --out results/bench/predictions.json
	$(BIN)/python -m classwise.bench.labels_shifts --out results/bench/labels_shifts.json
	$(BIN)/python -m classwise.bench.pgd --out results/bench/pgd.json $(PGD_BENCH_ARGS)
	$(BIN)/python -m classwise.bench.autoattack --out results/bench/autoattack.json $(AUTOATTACK_BENCH_ARGS)
	$(BIN)/python -m classwise.bench.bootstrap --out results/bench/bootstrap.json
	$(BIN)/python -m classwise.bench.class_drops --out results/bench/class_drops.json
	$(BIN)/python -m classwise.bench.numbers --out results/bench/numbers.json
	$(BIN)/python -m classwise.bench.pipeline --out results/bench/pipeline.json
	$(BIN)/python -m classwise.bench.inference --out results/bench/inference.json
	$(BIN)/python -m classwise.bench.precision --out results/bench/precision.json
	$(BIN)/python -m classwise.bench.demo --out results/bench/demo.json
	$(BIN)/python -m classwise.bench.explorer --out results/bench/explorer.json

soak:
	$(PYTHON) tools/soak_suite.py --runs $(SOAK_RUNS) --hogs $(SOAK_HOGS) --out results/soak

clean:
	rm -rf results .snakemake
