"""What the Snakemake workflow needs from the library at DAG-build time: the config resolved
against itself and the data (which models run on which dataset, which analyses apply), checked
before any job runs. Imports nothing heavy (no torch, timm or albumentations)."""

from classwise._extras import require

require("snakemake", "yaml", "jsonschema", extra="pipeline", feature="classwise.pipeline (the workflow)")
