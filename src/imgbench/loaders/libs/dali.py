"""NVIDIA DALI: the train recipe as a DALI graph, on the CPU, and with ``device="mixed"`` on CUDA.

The graph (``_recipe``) is the train recipe of ``imgbench.augment.spec`` in DALI ops:
``fn.decoders.image(output_type=RGB, adjust_orientation=False)`` -> ``fn.random_resized_crop``
(area 8-100%, aspect 3/4..4/3, 224 x 224, linear, antialiased) -> ``fn.color_twist`` (brightness,
contrast and saturation factors uniform in 1 -/+ 0.4, hue uniform in -/+ 36 degrees: DALI's
closest to ColorJitter, fixed order) -> ``fn.crop_mirror_normalize`` (mirror by
``fn.random.coin_flip(0.5)``, ImageNet mean and std on the 0..255 scale, float32, CHW).
``num_threads`` is the case's ``workers``; the pipeline prefetches 2 batches (DALI's default).

Two sources (``dali_source``): DALI's own ``fn.readers.file`` over the dataset's files
(``random_shuffle=True``), and ``fn.external_source`` fed by imgbench's format readers (files,
LMDB, tar shards: one record per sample, read in the Python thread that calls ``run()``, in
reshuffled epochs), so a format's cost shows against DALI's reader. ``dali_device="mixed"``
decodes with nvJPEG on GPU 0 and runs the rest there; without CUDA it is one skipped row.

DALI stops the whole batch on an image it cannot decode (its default); a file that cannot be
read (zero bytes) stops it too. The loader then decodes every sample of the pool once with
DALI's CPU decoder and fails the case naming each bad one. The graph cannot time its parts:
``stage_s`` is None, as tf.data's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from imgbench.augment import spec
from imgbench.augment.base import IMAGENET_MEAN, IMAGENET_STD
from imgbench.loaders.base import Batch, LoaderError, clock
from imgbench.loaders.documented import (
    ROI,
    Documented,
    configuration_columns,
    documented_counts,
    documented_params,
)
from imgbench.loaders.pipeline import FILES, SamplePipeline

if TYPE_CHECKING:
    from imgbench.loaders.plan import LoaderPlan
    from imgbench.measure.case import Case

LIBRARY = "dali"
READER_FILE = "reader-file"  # fn.readers.file over the dataset's files
EXTERNAL = "external-source"  # fn.external_source fed by imgbench's format readers
EXTERNAL_FORMATS = (FILES, "lmdb", "tar")  # stores of encoded bytes
DECODER = "dali/decoders-image"
AUGMENT = "dali"  # DALI's own graph, as "tensorflow" is tf.data's
RECIPE = "train-classification"
PREFETCH = 2  # DALI's default prefetch_queue_depth
FULL_DECODE = "image"  # fn.decoders.image, then fn.random_resized_crop (the same recipe's)
ROI_DECODE = "image-random-crop"  # fn.decoders.image_random_crop, then fn.resize (DALI's own)
RUN_ITERATOR = "run"  # pipe.run(), then the outputs copied into torch tensors
GENERIC_ITERATOR = "generic"  # DALIGenericIterator, as DALI's PyTorch examples read a pipeline
# DALI's own ResNet-50 training example builds the crop this way (create_dali_pipeline) and reads
# the pipeline through DALIClassificationIterator (a DALIGenericIterator)
DOCUMENTED = Documented(
    source="NVIDIA/DALI docs/examples/use_cases/pytorch/resnet50/main.py, create_dali_pipeline "
    "(fn.decoders.image_random_crop + fn.resize) read by DALIClassificationIterator; DALI 2.4",
    params={"dali_decode": ROI_DECODE, "dali_iterator": GENERIC_ITERATOR},
    crop_decode=ROI,
)
DIAGNOSIS_MAX_S = 30.0  # naming bad samples after a failure: at most this long
NAMED_BAD = 10  # bad samples named in the error; the rest counted
DALI_ERROR = "Critical error in pipeline"  # how DALI's own operator failures begin


def _recipe(fn: Any, types: Any, encoded: Any, device: str, decode: str = FULL_DECODE) -> Any:
    b, c, s, h = spec.JITTER
    if decode == ROI_DECODE:
        images = _roi_crop(fn, types, encoded, device)
    else:
        images = fn.decoders.image(
            encoded, device=device, output_type=types.RGB, adjust_orientation=False
        )
        images = fn.random_resized_crop(
            images,
            size=(spec.SIZE, spec.SIZE),
            random_area=spec.RRC_SCALE,
            random_aspect_ratio=spec.RRC_RATIO,
            interp_type=types.INTERP_LINEAR,
            antialias=True,
        )
    images = fn.color_twist(
        images,
        brightness=fn.random.uniform(range=(1 - b, 1 + b)),
        contrast=fn.random.uniform(range=(1 - c, 1 + c)),
        saturation=fn.random.uniform(range=(1 - s, 1 + s)),
        hue=fn.random.uniform(range=(-360 * h, 360 * h)),  # degrees; spec: a fraction of a turn
    )
    return fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[255 * m for m in IMAGENET_MEAN],
        std=[255 * v for v in IMAGENET_STD],
        mirror=fn.random.coin_flip(probability=spec.FLIP_P),
    )


def _roi_crop(
    fn: Any, types: Any, encoded: Any, device: str, window: tuple[int, int, int, int] | None = None
) -> Any:
    """DALI's ResNet-50 example's crop: :func:`roi_decode`, then ``fn.resize`` to 224 x 224
    with the triangular (antialiased linear) filter, as the example resizes."""
    return fn.resize(
        roi_decode(fn, types, encoded, device, window),
        resize_x=spec.SIZE,
        resize_y=spec.SIZE,
        interp_type=types.INTERP_TRIANGULAR,
    )


def roi_decode(
    fn: Any, types: Any, encoded: Any, device: str, window: tuple[int, int, int, int] | None = None
) -> Any:
    """The decoder draws the crop's window (area 8-100%, aspect 3/4..4/3, up to 100 attempts, as
    the example) and decodes only that part of the JPEG. ``window`` (x, y, w, h in pixels)
    forces it (``fn.decoders.image_slice``): the check that a ROI decode equals decode-then-crop.
    """
    if window is None:
        return fn.decoders.image_random_crop(
            encoded,
            device=device,
            output_type=types.RGB,
            adjust_orientation=False,
            random_area=spec.RRC_SCALE,
            random_aspect_ratio=spec.RRC_RATIO,
            num_attempts=100,
        )
    x, y, w, h = window
    return fn.decoders.image_slice(
        encoded,
        device=device,
        output_type=types.RGB,
        adjust_orientation=False,
        start=(x, y),
        shape=(w, h),
        normalized_anchor=False,
        normalized_shape=False,
    )


class DaliLoader:
    def __init__(self, pipeline: SamplePipeline, params: Mapping[str, Any]) -> None:
        self.pipeline = pipeline
        self.source = pipeline.source
        self.batch_size = int(params["batch_size"])
        self.threads = max(1, int(params.get("workers") or 1))
        self.source_kind = str(params.get("dali_source") or READER_FILE)
        self.device = str(params.get("dali_device") or "cpu")
        self.decode = str(params.get("dali_decode") or FULL_DECODE)
        self.iterator = str(params.get("dali_iterator") or RUN_ITERATOR)
        if self.iterator == GENERIC_ITERATOR and self.source_kind != READER_FILE:
            raise ValueError("DALIGenericIterator's epochs come from fn.readers.file's reader")
        self.extra: dict[str, Any] = {
            "dali_source": self.source_kind,
            "dali_device": self.device,
            "dali_decode": self.decode,
            "dali_iterator": self.iterator,
            "dali_prefetch_queue_depth": PREFETCH,
        }
        self._pipe: Any = None
        self._indices: Iterator[list[int]] | None = None
        # imported here, before the first batch's deadline starts: torch and DALI's plugin take
        # seconds to import, and an import cut by the deadline leaves torch half-initialised
        from nvidia.dali.plugin.pytorch.torch_utils import to_torch_tensor

        self._to_torch = to_torch_tensor
        if self.source_kind == READER_FILE and not hasattr(self.source, "paths"):
            raise ValueError(f"dali {READER_FILE} reads the dataset's files, not {self.source!r}")

    def _build(self) -> Any:
        from nvidia.dali import fn, types
        from nvidia.dali.pipeline import Pipeline

        pipe = Pipeline(
            batch_size=self.batch_size,
            num_threads=self.threads,
            device_id=0 if self.device == "mixed" else None,
            prefetch_queue_depth=PREFETCH,
            seed=0,
        )
        with pipe:
            if self.source_kind == READER_FILE:
                encoded, labels = fn.readers.file(
                    files=[os.fsdecode(p) for p in self.source.paths],
                    labels=[int(v) for v in self.source.labels],
                    random_shuffle=True,
                    name="Reader",
                )
            else:
                from imgbench.loaders.libs.threads import endless_batches

                self._indices = endless_batches(len(self.source), self.batch_size)
                encoded, labels = fn.external_source(
                    source=self._next_batch,
                    num_outputs=2,
                    batch=True,
                    dtype=[types.DALIDataType.UINT8, types.DALIDataType.INT32],
                )
            pipe.set_outputs(_recipe(fn, types, encoded, self.device, self.decode), labels)
        start = clock()
        pipe.build()
        self.extra["dali_build_s"] = clock() - start
        return pipe

    def _next_batch(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """One batch of encoded samples from imgbench's format reader (external source)."""
        assert self._indices is not None
        payloads, labels = [], []
        for index in next(self._indices):
            payload, label = self.source[index]
            if isinstance(payload, np.ndarray):
                raise ValueError(f"sample {index} is decoded pixels; DALI decodes encoded bytes")
            payloads.append(np.frombuffer(payload, dtype=np.uint8))
            labels.append(np.array([label], dtype=np.int32))
        return payloads, labels

    def batches(self) -> Iterator[Batch]:
        self._pipe = self._build()
        if self.iterator == GENERIC_ITERATOR:
            return self._named_failures(self._run_generic())
        return self._named_failures(self._run())

    def _named_failures(self, batches: Iterator[Batch]) -> Iterator[Batch]:
        """DALI's own operator failures name every bad sample of the pool."""
        try:
            yield from batches
        except LoaderError:  # the harness's deadline, raised inside a source callback
            raise
        except RuntimeError as exc:
            if DALI_ERROR not in str(exc):  # a source's own error: passed on as it is
                raise
            raise LoaderError(self._failure(exc)) from None

    def _run(self) -> Iterator[Batch]:
        to_torch_tensor = self._to_torch
        while True:
            images, labels = self._pipe.run()
            batch = to_torch_tensor(images.as_tensor(), copy=True)
            label = to_torch_tensor(labels.as_tensor(), copy=True).reshape(-1).long()
            yield batch, label, None, None

    def _run_generic(self) -> Iterator[Batch]:
        """As DALI's ResNet-50 example reads its pipeline: ``DALIGenericIterator`` (DALI fills
        torch tensors in place, one copy), reset at each epoch's end (``auto_reset``), the last
        partial batch dropped."""
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

        loader = DALIGenericIterator(
            [self._pipe],
            ["data", "label"],
            reader_name="Reader",
            last_batch_policy=LastBatchPolicy.DROP,
            auto_reset=True,
        )
        while True:
            for out in loader:
                yield out[0]["data"], out[0]["label"].reshape(-1).long(), None, None

    def _failure(self, exc: BaseException) -> str:
        """DALI's error, and every sample of the pool its CPU decoder cannot read, by name."""
        from imgbench.readers.libs.dali import dali_cause

        cause = dali_cause(exc)
        bad, checked = self._bad_samples()
        if not bad:
            return f"DALI stopped the batch: {cause}"
        named = "; ".join(f"{name} ({why})" for name, why in bad[:NAMED_BAD])
        more = f" and {len(bad) - NAMED_BAD} more" if len(bad) > NAMED_BAD else ""
        scope = "" if checked == len(self.source) else f" (of {checked} checked)"
        return (
            f"DALI stops the whole batch on a sample it cannot read or decode: "
            f"{len(bad)} bad in the pool of {len(self.source)}{scope}: {named}{more} "
            f"[DALI: {cause}]"
        )

    def _bad_samples(self) -> tuple[list[tuple[str, str]], int]:
        """(name, reason) of each sample DALI's CPU decoder rejects, and how many were checked."""
        from imgbench.readers.libs.dali import DaliDecoder

        decoder = DaliDecoder()
        names = self._names()
        bad: list[tuple[str, str]] = []
        begin = clock()
        checked = 0
        for index in range(len(self.source)):
            if clock() - begin > DIAGNOSIS_MAX_S:
                break
            checked += 1
            try:
                data = self._payload(index)
                if not data:
                    raise ValueError("zero bytes")
                decoder.decode(data)
            except Exception as exc:
                bad.append((names[index], str(exc).removeprefix("DALI fn.decoders.image: ")))
        return bad, checked

    def _payload(self, index: int) -> bytes:
        if self.source_kind == READER_FILE:
            with open(self.source.paths[index], "rb") as handle:
                return handle.read()
        payload = self.source[index][0]
        return bytes(payload)

    def _names(self) -> list[str]:
        paths = getattr(self.source, "paths", None)
        if paths is not None:
            return [os.fsdecode(p) for p in paths]
        path = getattr(self.source, "path", None)
        if path is not None:
            from imgbench.formats.base import read_keys

            return [key for key, _ in read_keys(path)]
        return [f"sample {i}" for i in range(len(self.source))]

    def worker_pids(self) -> list[int]:
        return []  # DALI's workers are threads of this process

    def close(self) -> None:
        if self._pipe is not None:
            pipe, self._pipe = self._pipe, None
            pipe._shutdown()  # stops its threads now, not at garbage collection
        self._indices = None


def build(pipeline: SamplePipeline, params: Mapping[str, Any]) -> DaliLoader:
    return DaliLoader(pipeline, params)


# -- cases ---------------------------------------------------------------------------------------
def has_nvidia_device() -> bool:
    """An NVIDIA device node exists (cheap, touches no driver): plans mixed rows over the sweep."""
    return any(Path("/dev").glob("nvidia[0-9]*"))


def cuda_problem() -> str | None:
    """Why ``device="mixed"`` cannot run here, or None. Asks NVML, not the CUDA runtime: the
    check runs in the process that forks the case's worker, which must not have touched CUDA."""
    if not has_nvidia_device():
        return "dali mixed: no CUDA device on this machine (no /dev/nvidia*)"
    import torch

    previous = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    try:
        available = torch.cuda.is_available()
    finally:
        if previous is None:
            del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = previous
    return None if available else "dali mixed: no CUDA device on this machine (NVML sees none)"


def plan_cases(plan: LoaderPlan) -> list[Case]:
    """CPU ``fn.readers.file`` over the plan's thread sweep; ``fn.external_source`` over each
    format at the sweep's first count; ``mixed`` over the sweep where a GPU is present, else
    one row that skips with the reason; one AU row at the first emulated accelerator speed
    (``fn.readers.file``, ``au_workers`` threads)."""
    sweep = plan.thread_sweep or (1,)
    first = sweep[0]
    cases = [dali_case(plan, t) for t in sweep]
    cases += [dali_case(plan, first, source=EXTERNAL, fmt=f) for f in EXTERNAL_FORMATS]
    gpu = has_nvidia_device()
    cases += [dali_case(plan, t, device="mixed") for t in (sweep if gpu else (first,))]
    if plan.au_accelerators:  # as every loader's AU row: at au_workers threads where swept
        threads = plan.au_workers if plan.au_workers in sweep else first
        cases.append(dali_case(plan, threads, accelerator=plan.au_accelerators[0]))
    return cases


def documented_cases(plan: LoaderPlan) -> list[Case]:
    """DALI as its ResNet-50 example builds it (region-of-interest decode), over the sweep."""
    return [dali_case(plan, t, documented=DOCUMENTED) for t in documented_counts(plan.thread_sweep)]


def dali_case(
    plan: LoaderPlan,
    threads: int,
    *,
    source: str = READER_FILE,
    fmt: str = FILES,
    device: str = "cpu",
    accelerator: int | None = None,
    batch_timeout_s: float | None = None,
    documented: Documented | None = None,
) -> Case:
    """One DALI case; parameters named as every loader case's, plus ``dali_source`` and
    ``dali_device`` (and ``dali_decode`` as documented). Built here, not by ``loader_case``:
    the recipe is DALI's own graph, not an augment-registry library."""
    from imgbench.formats.registry import get_format
    from imgbench.loaders.cases import batches_per_round, prepare_loader
    from imgbench.loaders.registry import get_loader
    from imgbench.measure.case import spec_case

    entry = get_loader(LIBRARY)
    params: dict[str, Any] = {
        "workers": threads,
        "batch_size": plan.batch_size,
        "batches_per_round": batches_per_round(plan, threads, entry),
        "threads": 1,
        "format": fmt,
        "decoder": DECODER,
        "pipeline": f"{AUGMENT}:{RECIPE}",
        "prefetch_factor": PREFETCH,
        "dali_source": source,
        "dali_device": device,
    }
    if accelerator is not None:
        params["accelerator_images_per_s"] = accelerator
        params["compute_kind"] = "sleep"
    if batch_timeout_s is not None:
        params["batch_timeout_s"] = batch_timeout_s
    if documented is not None:
        params.update(documented_params(documented))
    requires = entry.requires + (get_format(fmt).requires if fmt != FILES else ())
    parts = [fmt, source, device]
    if accelerator is not None:
        parts.append(f"au-sleep-{accelerator}ips")
    if documented is not None:
        parts.append("as-documented")
    columns: dict[str, Any] = {"storage": "local"}
    columns.update(configuration_columns(entry.system_name, crops=True, documented=documented))
    return spec_case(
        entry,
        stage="loader",
        variant="+".join(parts),
        prepare=prepare_loader,
        params=params,
        requires=tuple(dict.fromkeys(requires)),
        check=cuda_problem if device == "mixed" else None,
        columns=columns,
    )
