"""Benchmarks (``make bench``, results in ``results/bench/``) and the stand-in inputs they and
the tests build: ``metrics`` (the metric core at ImageNet scale), ``bootstrap``, ``pgd``
and ``autoattack`` (beside torchattacks), ``pipeline`` (dry runs and inference throughput), ``inference`` (decoding
overlapped with a stand-in accelerator) and ``fixtures``.
Nothing in the library imports this package."""
