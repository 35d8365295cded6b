"""A model's outputs on a shift: running it, and splitting or merging the jobs that do.

* :mod:`~classwise.inference.stream` - the logits of a model on an image set under a shift,
  batched, the batches made ahead of the model on a background thread (torch);
* :mod:`~classwise.inference.execution` - how a job runs its model: device, precision, layout
  (torch-free: the workflow checks it before any job);
* :mod:`~classwise.inference.sharding` - one inference split into shards whose files merge into
  the one cached logits file;
* :mod:`~classwise.inference.shared_decode` - one decode feeding several models: which of their
  logits files are up to date, in which batches to hold them.

The package imports none of them, so that the workflow reads the torch-free ones at DAG-build
time without torch.
"""
