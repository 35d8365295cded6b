"""Logits of a model on an image set under a shift, batched; the shift's kind makes each batch
(:mod:`classwise.shifts.kinds`: clean, a corruption, PGD, AutoAttack, a transfer attack, a
published set's images as they are).

**Overlap.** A background thread makes the batches ahead of the model (:func:`stream_logits`):
it decodes the images of an image-file set (with the decoding threads of
:meth:`~classwise.data.imagefolder.ImageFolderDataset.iter_batches`) and, for a shift that runs no
model (clean, a corruption, a published set), shifts them on the CPU, into pinned memory when the
model is on a GPU, while the model runs the batch before; the model's thread copies each batch to
the device without blocking. A shift that runs a model (PGD, AutoAttack, a transfer attack) is
made in the model's thread, its images decoded ahead. The batches, their seeds and the
arithmetic are those of the one-thread loop (``prefetch=0``), so the logits are the same bytes.

**One decode, several models.** :func:`stream_logits` feeds every batch to each of several models
that take the same images (the same data config) under a shift that runs no model: the images are
decoded and shifted once for all of them.

Randomness is per sample: corruption ``i`` is seeded with
``sample_seed(base_seed, shift.name, sample_ids[i])`` and so is PGD's random start, so results
depend neither on the batch size nor on the order of the samples.

Targeted PGD: a ``pgd`` shift whose params hold ``"target": t`` (an integer class index)
attacks every sample towards class ``t`` (minimising the cross-entropy of ``t``). Samples whose
label already is ``t`` are kept and attacked like the others, which only pushes them further
into their own class; the success rate
(:func:`classwise.robustness.targeted.targeted_success_rates`) leaves them out.

AutoAttack (``kind="autoattack"``) is seeded with ``sample_seed(base_seed, shift.name)`` for
every batch; its random draws are per batch (:mod:`classwise.shifts.autoattack`), so its logits
depend on the batch size as well as on the seed.

A transfer attack (``kind="transfer"``) crafts its attack on the source model exactly as the
source's own attack shift does (same seeds: they derive from the attack's name), then feeds the
images to the evaluated model: the images are regenerated in every job, never stored.

**Precision and layout** (:class:`classwise.inference.execution.Execution`): ``bf16`` / ``fp16`` run the
model (and an attack's forward and backward passes) under ``torch.autocast``; ``channels_last``
puts the model's weights and each batch in channels-last order. ``fp32`` and channels first, the
defaults, run the model as it is.

**Out of memory.** A CUDA out-of-memory error while a model runs a batch halves the batch size
and goes on: the batch is cut into halves (again, until it fits or a single image does not), and
every later batch is cut the same way; a warning in the log says so. Corruptions and PGD are
seeded per sample, so their logits are those of a run at the smaller batch size; AutoAttack draws
per batch, so its batches before the error are those of the configured size and the ones after
of the smaller size.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Generic, TypeVar

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from classwise.data.imageset import ImageSet
from classwise.errors import InputError, check_count
from classwise.inference.execution import DEFAULT_EXECUTION, Execution
from classwise.shifts.kinds import Batch, Run, ShiftSpec

log = logging.getLogger(__name__)

#: How many batches the background thread makes ahead of the model by default.
PREFETCH = 2

_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

T = TypeVar("T")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; anything else is parsed by ``torch.device``.

    Asking for CUDA on a machine without it raises :class:`InputError`.
    """
    if isinstance(device, torch.device):
        resolved = device
    elif device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            resolved = torch.device(device)
        except (RuntimeError, TypeError):
            raise InputError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda[:N]'", field="device") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r} requested but CUDA is not available", field="device")
    return resolved


def _on_device(model: nn.Module, device: torch.device) -> bool:
    """Whether every parameter and buffer of ``model`` is on ``device`` (``cuda`` without an index
    means the current CUDA device)."""
    index = device.index
    if device.type == "cuda" and index is None:
        index = torch.cuda.current_device()
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        if tensor.device.type != device.type or (index is not None and tensor.device.index != index):
            return False
    return True


def pgd_target(shift: ShiftSpec, n_classes: int) -> int | None:
    """The class a targeted shift attacks every sample towards (:attr:`ShiftSpec.target`), else ``None``.

    Raises :class:`InputError` unless the target is an integer in ``[0, n_classes)``.
    """
    target = shift.target
    if target is None:
        return None
    if isinstance(target, bool) or not isinstance(target, (int, np.integer)) or not 0 <= target < n_classes:
        raise InputError(
            f"shift {shift.name!r}: expected an integer class index in [0, {n_classes}), got {target!r}",
            field="target",
        )
    return int(target)


@contextlib.contextmanager
def _ready(model: nn.Module | None, device: torch.device, *, channels_last: bool = False) -> Iterator[None]:
    """``model`` on ``device`` in eval mode (its weights channels-last when asked), its device,
    modes and layout restored afterwards. Moving a model that is already on the device and
    switching modules that are already in eval mode would cost milliseconds per call."""
    if model is None:
        yield
        return
    original = next((p.device for p in model.parameters()), None)
    moved = not _on_device(model, device)
    training = [module for module in model.modules() if module.training]
    if moved:
        model.to(device)
    if training:
        model.eval()
    if channels_last:
        model.to(memory_format=torch.channels_last)
    try:
        yield
    finally:
        if channels_last:
            model.to(memory_format=torch.contiguous_format)
        for module in training:
            module.training = True
        if moved and original is not None:
            model.to(original)


class _Prefetched(Generic[T]):
    """The items of ``items`` made by a background thread, up to ``depth`` ahead of the consumer
    (``depth=0``: made in the consumer's thread, one after the other). An error of the thread is
    raised in the consumer; leaving the ``with`` block stops the thread and joins it."""

    def __init__(self, items: Iterator[T], depth: int) -> None:
        depth = check_count(depth, "prefetch", minimum=0)
        self._items, self._depth = items, depth
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=max(depth, 1))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Prefetched[T]:
        if self._depth:
            self._thread = threading.Thread(target=self._produce, name="classwise-prefetch", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is None:
            _close(self._items)
            return
        # each put of the thread is followed by a look at the stop flag, and the queue has room
        # for that one put once emptied, so the thread ends without a timeout
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
        self._thread.join()

    def _produce(self) -> None:
        try:
            for item in self._items:
                self._queue.put(("item", item))
                if self._stop.is_set():
                    return
        except BaseException as error:  # raised again in the consumer's thread
            self._queue.put(("error", error))
            return
        finally:
            _close(self._items)
        self._queue.put(("done", None))

    def __iter__(self) -> Iterator[T]:
        if self._thread is None:
            yield from self._items
            return
        while True:
            kind, payload = self._queue.get()
            if kind == "done":
                return
            if kind == "error":
                raise payload
            yield payload


def _close(items: Iterator[Any]) -> None:
    close = getattr(items, "close", None)
    if close is not None:
        close()


@dataclass(frozen=True)
class _Prepared:
    """One batch as the background thread hands it over: the images as decoded, and, for a shift
    that runs no model, the shifted images on the CPU (pinned for a GPU)."""

    batch: Batch
    shifted: torch.Tensor | None


def _prepared(chunks: Iterable[ImageSet], shift: ShiftSpec, run: Run, batch_size: int, pin: bool) -> Iterator[_Prepared]:
    """The batches of ``chunks`` (decoded as they are iterated), ``batch_size`` images at most,
    each cut from one chunk; shifted here when the shift runs no model (``run.device`` the CPU)."""
    shifted_here = not shift.uses_a_model
    for chunk in chunks:
        for start in range(0, len(chunk), batch_size):
            stop = min(start + batch_size, len(chunk))
            batch = Batch(chunk.images[start:stop], chunk.labels[start:stop], chunk.sample_ids[start:stop])
            shifted = None
            if shifted_here:
                shifted = shift.shift_kind.shifted_batch(shift, batch, run)
                if pin:
                    shifted = shifted.pin_memory()
            yield _Prepared(batch, shifted)


class _BatchSize:
    """A model's batch size, halved by each CUDA out-of-memory error (:func:`_in_pieces`)."""

    def __init__(self, size: int, name: str) -> None:
        self.size, self.name = size, name


def _in_pieces(n: int, batch_size: _BatchSize, device: torch.device, work: Callable[[int, int], np.ndarray]) -> list[np.ndarray]:
    """``work(start, stop)`` over ``[0, n)`` in pieces of ``batch_size.size``; a CUDA out-of-memory
    error halves the size (for this and every later batch) and redoes the piece, until a single
    image does not fit."""
    pieces: list[np.ndarray] = []
    start = 0
    while start < n:
        stop = min(start + batch_size.size, n)
        try:
            pieces.append(work(start, stop))
        except torch.cuda.OutOfMemoryError:
            if batch_size.size == 1:
                raise
            out_of_memory = True
        else:
            out_of_memory = False
            start = stop
        if out_of_memory:  # outside the except clause, so that the failed piece's tensors are freed first
            smaller = max(1, batch_size.size // 2)
            log.warning(
                "%s: CUDA out of memory at batch size %d (images %d-%d of a batch of %d); going on at batch size %d",
                batch_size.name,
                batch_size.size,
                start,
                stop,
                n,
                smaller,
            )
            batch_size.size = smaller
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return pieces


def _arithmetic(execution: Execution, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """Autocast at the execution's precision (nothing at fp32)."""
    dtype = _AUTOCAST_DTYPES.get(execution.precision)
    return contextlib.nullcontext() if dtype is None else torch.autocast(device.type, dtype=dtype)


def _stream(
    models: Sequence[nn.Module],
    chunks: Iterable[ImageSet],
    shift: ShiftSpec,
    *,
    n_classes: int,
    base_seed: int,
    batch_size: int,
    execution: Execution,
    prefetch: int,
    want_logits: bool,
    attack_log: IO[str] | None,
    source_model: nn.Module | None,
    names: Sequence[str] | None,
) -> Generator[tuple[Batch, list[np.ndarray]], None, None]:
    batch_size = check_count(batch_size, "batch_size")
    if not models:
        raise InputError("expected at least one model", field="models")
    device = resolve_device(execution.device)
    pgd_target(shift, n_classes)
    if shift.source_model is not None and source_model is None:
        raise InputError(f"shift {shift.name!r} transfers an attack from model {shift.source_model!r}: pass it", field="source")
    if len(models) > 1 and shift.uses_a_model:
        raise InputError(
            f"shift {shift.name!r} runs a model to make its images (an attack): each model needs its own", field="shift"
        )
    sizes = [_BatchSize(batch_size, name) for name in (names or [f"model {i + 1}" for i in range(len(models))])]
    pin = device.type == "cuda"
    cpu_run = Run(models[0], base_seed, torch.device("cpu"), attack_log, source_model)
    channels_last = execution.channels_last
    with contextlib.ExitStack() as stack:
        for model in (*models, source_model):
            stack.enter_context(_ready(model, device, channels_last=channels_last))
        prepared = stack.enter_context(_Prefetched(_prepared(chunks, shift, cpu_run, batch_size, pin), prefetch))
        for item in prepared:
            batch = item.batch
            outputs = []
            for model, size in zip(models, sizes, strict=True):
                run = Run(model, base_seed, device, attack_log, source_model)

                def work(start: int, stop: int, item: _Prepared = item, run: Run = run, model: nn.Module = model) -> np.ndarray:
                    with _arithmetic(execution, device):
                        if item.shifted is not None:
                            x = item.shifted[start:stop].to(device, non_blocking=pin)
                        else:
                            b = item.batch
                            piece = Batch(b.images[start:stop], b.labels[start:stop], b.sample_ids[start:stop])
                            x = shift.shift_kind.shifted_batch(shift, piece, run)
                        if not want_logits:
                            return x.float().cpu().numpy()
                        if channels_last and x.dim() == 4:
                            x = x.contiguous(memory_format=torch.channels_last)
                        with torch.inference_mode():
                            return model(x).float().cpu().numpy()

                pieces = _in_pieces(len(batch.labels), size, device, work)
                outputs.append(pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=0))
            yield batch, outputs


@contextlib.contextmanager
def stream_logits(
    models: Sequence[nn.Module] | Mapping[str, nn.Module],
    chunks: Iterable[ImageSet],
    shift: ShiftSpec,
    *,
    n_classes: int,
    base_seed: int,
    batch_size: int = 256,
    execution: Execution = DEFAULT_EXECUTION,
    prefetch: int = PREFETCH,
    attack_log: IO[str] | None = None,
    source_model: nn.Module | None = None,
) -> Iterator[Iterator[tuple[Batch, list[np.ndarray]]]]:
    """Each batch of ``chunks`` (image sets, decoded lazily or in memory; batches of at most
    ``batch_size`` images cut from one chunk) with each model's ``(n, C)`` logits on it, made by
    the shift's kind; the batches are made ``prefetch`` ahead by a background thread (0: one
    after the other in this thread), which the ``with`` block joins when it ends.

    Several ``models`` take the same images (the caller checks their data configs) under a
    shift that runs no model (an :class:`InputError` otherwise): each batch is decoded and
    shifted once for all; given as a mapping, their names label the log's out-of-memory
    warnings. ``n_classes``: the set's class count (a targeted shift's target is checked against
    it); ``execution``: the device, precision and layout the models run with
    (:class:`classwise.inference.execution.Execution`); ``attack_log``: AutoAttack's line per
    attack; ``source_model``: a ``transfer`` shift's source (:func:`transferred_images`)."""
    named = dict(models) if isinstance(models, Mapping) else {f"model {i + 1}": model for i, model in enumerate(models)}
    with _streaming(
        list(named.values()),
        chunks,
        shift,
        n_classes=n_classes,
        base_seed=base_seed,
        batch_size=batch_size,
        execution=execution,
        prefetch=prefetch,
        want_logits=True,
        attack_log=attack_log,
        source_model=source_model,
        names=list(named),
    ) as batches:
        yield batches


@contextlib.contextmanager
def _streaming(
    models: Sequence[nn.Module], chunks: Iterable[ImageSet], shift: ShiftSpec, **options: Any
) -> Iterator[Iterator[tuple[Batch, list[np.ndarray]]]]:
    """:func:`_stream`'s batches, its thread joined when the ``with`` block ends (``want_logits=False``:
    the images the models see instead of their logits)."""
    generator = _stream(models, chunks, shift, **options)
    try:
        yield generator
    finally:
        generator.close()


def _iterate(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    progress: IO[str] | None,
    want_logits: bool,
    **options: Any,
) -> np.ndarray:
    """``model``'s logits (or the images it sees) on ``images`` under ``shift``, batch by batch."""
    outputs: list[np.ndarray] = []
    bar = tqdm(total=len(images), desc=shift.name, unit="img", file=progress, disable=progress is None)
    try:
        with _streaming(
            [model], [images], shift, n_classes=images.n_classes, want_logits=want_logits, names=None, **options
        ) as batches:
            for batch, (output,) in batches:
                outputs.append(output)
                bar.update(len(batch.labels))
    finally:
        bar.close()
    if outputs:
        return np.concatenate(outputs, axis=0).astype(np.float32, copy=False)
    if not want_logits:
        return np.zeros((0, *images.input_shape), dtype=np.float32)
    with torch.inference_mode():
        n_out = model(torch.zeros((1, *images.input_shape), device=next(model.parameters()).device)).shape[1]
    return np.zeros((0, n_out), dtype=np.float32)


def predict_logits(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    execution: Execution = DEFAULT_EXECUTION,
    prefetch: int = PREFETCH,
    progress: IO[str] | None = None,
    attack_log: IO[str] | None = None,
    source_model: nn.Module | None = None,
) -> np.ndarray:
    """``(N, C)`` float32 logits of ``model`` on ``images`` under ``shift``.

    The model runs in eval mode on the execution's device (``"auto"``: CUDA when available) under
    :func:`torch.inference_mode` for clean and corrupted batches; PGD and AutoAttack batches are
    attacked first (gradients w.r.t. the input only). The model's device, train/eval mode and
    layout are restored. ``execution``: the device, precision and layout
    (:class:`classwise.inference.execution.Execution`); ``prefetch``: batches made ahead by a
    background thread (:func:`stream_logits`); ``progress``: a progress bar; ``attack_log``:
    AutoAttack's line per attack. A ``transfer`` shift needs ``source_model``, the model its
    attack is crafted on (:func:`transferred_images`).
    """
    return _iterate(
        model,
        images,
        shift,
        progress=progress,
        want_logits=True,
        base_seed=base_seed,
        batch_size=batch_size,
        execution=execution,
        prefetch=prefetch,
        attack_log=attack_log,
        source_model=source_model,
    )


def shifted_images(
    model: nn.Module,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    execution: Execution = DEFAULT_EXECUTION,
    progress: IO[str] | None = None,
    attack_log: IO[str] | None = None,
) -> np.ndarray:
    """The ``(N, C_in, H, W)`` images exactly as :func:`predict_logits` feeds them to the model
    (e.g. for example figures). ``model`` is only used by the attacks."""
    return _iterate(
        model,
        images,
        shift,
        progress=progress,
        want_logits=False,
        base_seed=base_seed,
        batch_size=batch_size,
        execution=execution,
        prefetch=PREFETCH,
        attack_log=attack_log,
        source_model=None,
    )


def transferred_images(
    source_model: nn.Module | None,
    images: ImageSet,
    shift: ShiftSpec,
    *,
    base_seed: int,
    batch_size: int = 256,
    execution: Execution = DEFAULT_EXECUTION,
    attack_log: IO[str] | None = None,
) -> np.ndarray:
    """The images of a ``transfer`` shift: its attack (:attr:`ShiftSpec.attack`) crafted on
    ``source_model`` with the seeds of the source's own attack shift, so they equal the images
    that shift feeds the source (same ``base_seed`` and, for AutoAttack, ``batch_size``)."""
    if source_model is None:
        raise InputError(f"shift {shift.name!r} transfers an attack from model {shift.source_model!r}: pass it", field="source")
    return shifted_images(
        source_model, images, shift.attack, base_seed=base_seed, batch_size=batch_size, execution=execution, attack_log=attack_log
    )
