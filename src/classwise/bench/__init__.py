"""Benchmarks (``make bench``, results in ``results/bench/``) and the stand-in inputs they and
the tests build: ``metrics`` (the metric core at ImageNet scale), ``bootstrap``, ``pgd``
and ``autoattack`` (beside torchattacks), ``pipeline`` (dry runs and inference throughput), ``inference`` (decoding
overlapped with a stand-in accelerator), ``precision`` (what bf16, fp16 and channels-last change in
the predictions) and ``fixtures``.
Nothing in the library imports this package."""
